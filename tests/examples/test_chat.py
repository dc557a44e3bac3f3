"""The chat example as people run it: ``uvicorn --workers 2`` and ``mem01session worker``,
driven over HTTP and in Debian's chromium."""

from __future__ import annotations

import asyncio
import json
import os
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bench.chat_load import ChatApp, drained, exactly_once, run_load

from mem01session.embeddings import HashingEmbedder
from tests.conftest import TEST_DIM

CHROMIUM = Path(os.environ.get("MEM01_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("MEM01_CHROMEDRIVER", "/usr/bin/chromedriver"))
WAIT = 60.0


@pytest.fixture
def app(db_url: str, tmp_path: Path) -> Iterator[ChatApp]:
    """The example as people run it: two server processes and a worker."""
    running = ChatApp(db_url, tmp_path / "chat")
    running.env_extra = {"MEM01_EMBEDDING_MODEL": HashingEmbedder(TEST_DIM).name}
    running.start()
    try:
        yield running
    finally:
        running.stop()


def say(app: ChatApp, user: str, chat: str, text: str) -> str:
    request = urllib.request.Request(
        app.url + "/api/chat",
        data=json.dumps({"chat": chat, "text": text}).encode(),
        headers={"Content-Type": "application/json", "X-User": user},
    )
    with urllib.request.urlopen(request, timeout=WAIT) as response:
        return str(response.read().decode())


def held(app: ChatApp, user: str) -> dict[str, Any]:
    request = urllib.request.Request(app.url + "/api/memory", headers={"X-User": user})
    with urllib.request.urlopen(request, timeout=WAIT) as response:
        found: dict[str, Any] = json.loads(response.read())
    return found


def two_server_processes_share_one_memory(app: ChatApp) -> None:
    assert say(app, "ana", "tab-1", "I keep bees on my roof.") == "Noted."
    # Each request may land on either process: a new conversation sees the first one's turn.
    for n in range(4):
        answer = say(app, "ana", f"tab-{n + 2}", "What do I keep on my roof?")
        assert "bees" in answer, answer
    [belief] = held(app, "ana")["beliefs"]
    assert belief["content"] == "Keeps bees on their roof"
    assert held(app, "ben")["beliefs"] == []  # another user sees nothing of it


def a_client_leaving_mid_answer_breaks_nothing(app: ChatApp) -> None:
    request = urllib.request.Request(
        app.url + "/api/chat",
        data=json.dumps({"chat": "t", "text": "Hi! How are you today?"}).encode(),
        headers={"Content-Type": "application/json", "X-User": "cy"},
    )
    with urllib.request.urlopen(request, timeout=WAIT) as response:
        response.read(1)  # the first words, then gone
    assert say(app, "cy", "t", "I live in Oslo.") == "Noted."
    assert "Oslo" in say(app, "cy", "u", "Where do I live?")


def the_page_streams_remembers_across_tabs_and_forgets(
    app: ChatApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    monkeypatch.setenv("SE_OFFLINE", "true")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--no-first-run", "--disable-background-networking",
                 f"--user-data-dir={tmp_path / 'profile'}"):  # fmt: skip
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    wait = WebDriverWait(driver, WAIT)

    def ask(text: str) -> str:
        before = len(driver.find_elements(By.CSS_SELECTOR, ".bot.done"))
        driver.find_element(By.ID, "text").send_keys(text)
        driver.find_element(By.ID, "send").click()
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".bot.done")) > before)
        return str(driver.find_elements(By.CSS_SELECTOR, ".bot.done")[-1].text)

    # Read and clicked in the page, in one step each: the panel is drawn again whenever the
    # memory answers, and an element found a moment before may be gone (stale) by then.
    def beliefs() -> list[str]:
        return list(
            driver.execute_script(
                "return [...document.querySelectorAll('#beliefs li')].map(li => li.innerText)"
            )
        )

    try:
        driver.get(app.url)
        assert ask("I keep bees on my roof.") == "Noted."
        driver.find_element(By.ID, "new-chat").click()  # a new conversation
        assert "bees" in ask("What do I keep on my roof?")
        wait.until(lambda d: any("Keeps bees" in b for b in beliefs()))
        driver.execute_script("document.querySelector('#beliefs li button.forget').click()")
        wait.until(lambda d: not any("Keeps bees" in b for b in beliefs()))
        driver.find_element(By.ID, "new-chat").click()
        assert "bees" not in ask("What do I keep on my roof?")
    finally:
        driver.quit()


async def _load_with_a_restart(app: ChatApp) -> Any:
    halfway, resumed = asyncio.Event(), asyncio.Event()
    load = asyncio.create_task(
        run_load(app, 8, 4, think=(0.05, 0.2), halfway=halfway, resumed=resumed)
    )
    await halfway.wait()
    await asyncio.to_thread(app.stop_server)  # SIGTERM, as a deploy sends it
    await asyncio.to_thread(app.start)
    resumed.set()
    return await load


def a_server_stopped_mid_load_keeps_every_answered_turn_once(app: ChatApp) -> None:
    load = asyncio.run(_load_with_a_restart(app))
    assert len(load.answered) >= 16  # the half before the stop, and what came after it
    drained(app.db_url)
    once, lost, twice = exactly_once(load, app.db_url)
    assert (once, lost, twice) == (len(load.answered), 0, 0)


@pytest.mark.slow
def test_the_example_as_people_run_it(
    app: ChatApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One start of the app for every check (each start costs seconds): over HTTP, two
    processes serve one memory and a client may leave mid-answer; a SIGTERM in the middle
    of a load loses nothing; then the page itself, in chromium."""
    two_server_processes_share_one_memory(app)
    a_client_leaving_mid_answer_breaks_nothing(app)
    a_server_stopped_mid_load_keeps_every_answered_turn_once(app)
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip(
            f"the browser part: {CHROMIUM} or {CHROMEDRIVER} is missing "
            "(apt-get install -y chromium chromium-driver); the HTTP parts passed"
        )
    the_page_streams_remembers_across_tabs_and_forgets(app, tmp_path, monkeypatch)
