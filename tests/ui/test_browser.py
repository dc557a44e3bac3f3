"""The real page in headless Chromium: open the users page, open a user, search a belief,
correct it, see the new text and the superseded one in the history.

Needs Debian's ``chromium`` and ``chromium-driver`` (``apt-get install -y chromium
chromium-driver``); skipped with the reason when they are missing. Nothing is downloaded:
Selenium is handed the driver and the browser, and Selenium Manager is told to stay
offline. A screenshot goes to a temporary folder; with ``MEM01_UI_SCREENSHOT=PATH`` the
belief history page is also saved to PATH (the README's is ``docs/img/ui-history.png``)::

    MEM01_UI_SCREENSHOT=docs/img/ui-history.png python -m pytest tests/ui/test_browser.py
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .live import live_browser
from .seed import ALICE, Seeded

CHROMIUM = Path(os.environ.get("MEM01_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("MEM01_CHROMEDRIVER", "/usr/bin/chromedriver"))
WAIT = 30.0

pytestmark = pytest.mark.skipif(
    not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
    reason=f"no headless browser: {CHROMIUM} or {CHROMEDRIVER} is missing "
    "(apt-get install -y chromium chromium-driver)",
)


@pytest.fixture
def driver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    from selenium.webdriver.chrome.service import Service

    monkeypatch.setenv("SE_OFFLINE", "true")  # Selenium Manager: never download anything
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--window-size=1280,900",
        f"--user-data-dir={tmp_path / 'profile'}",
    ):
        options.add_argument(flag)
    browser = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    try:
        yield browser
    finally:
        browser.quit()


@pytest.mark.slow
def test_search_correct_and_see_the_history(driver: Any, seeded: Seeded, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, WAIT)
    with live_browser() as server:
        # The users page; open alice.
        driver.get(server.url)
        wait.until(ec.title_contains("Users"))
        driver.find_element(By.LINK_TEXT, ALICE).click()
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "table.beliefs")))

        # Search her beliefs (typing filters the rows at once; Enter asks the server).
        search = driver.find_element(By.NAME, "q")
        search.send_keys("san fran")
        search.send_keys(Keys.ENTER)
        wait.until(ec.url_contains("q=san+fran"))
        rows = driver.find_elements(By.CSS_SELECTOR, "table.beliefs tbody tr")
        assert [r.find_element(By.CSS_SELECTOR, "a.content").text for r in rows] == [
            "Lives in San Francisco"
        ]

        # Open the belief and correct it.
        driver.find_element(By.LINK_TEXT, "Lives in San Francisco").click()
        text = wait.until(ec.presence_of_element_located((By.NAME, "text")))
        text.clear()
        text.send_keys("Lives in Oakland")
        driver.find_element(By.CSS_SELECTOR, "form.correct input[name=reason]").send_keys(
            "moved across the bay"
        )
        driver.find_element(By.CSS_SELECTOR, "form.correct button[type=submit]").click()
        wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, ".flash"), "Corrected"))

        # The new text, and the superseded ones in the versions and the history.
        assert driver.find_element(By.ID, "belief-content").text == "Lives in Oakland"
        versions = driver.find_elements(By.CSS_SELECTOR, "table.versions tbody tr")
        assert [v.find_elements(By.TAG_NAME, "td")[1].text for v in versions] == [
            "Lives in New York City",
            "Lives in San Francisco",
            "Lives in Oakland",
        ]
        assert [v.find_elements(By.TAG_NAME, "td")[2].text.split()[0] for v in versions] == [
            "superseded",
            "superseded",
            "active",
        ]
        history = driver.find_element(By.CSS_SELECTOR, "table.ledger").text
        assert "CORRECT" in history and "moved across the bay" in history
        assert "inspector" in history
        correct = driver.find_elements(By.CSS_SELECTOR, "table.ledger tbody tr")[-1].text
        assert "Lives in San Francisco" in correct and "Lives in Oakland" in correct

        shot = tmp_path / "ui-history.png"
        _screenshot(driver, shot)
        assert shot.stat().st_size > 10_000
        target = os.environ.get("MEM01_UI_SCREENSHOT")
        if target:
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(shot, target)


def _screenshot(driver: Any, path: Path) -> None:
    """The whole page: the window grows to the document's height first."""
    chrome, height = driver.execute_script(
        "return [window.outerHeight - window.innerHeight, document.documentElement.scrollHeight]"
    )
    driver.set_window_size(1280, min(int(height) + int(chrome), 4000))
    driver.save_screenshot(str(path))
