// mem01session memory browser: progressive enhancement only; every page works without it.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  // Filter inputs narrow the tables below them as you type (the form still filters on the
  // server when submitted, over every row rather than the ones on this page).
  for (const input of document.querySelectorAll("input[data-filter-table]")) {
    const tables = document.querySelectorAll("table." + input.dataset.filterTable);
    if (!tables.length) continue;
    input.addEventListener("input", () => {
      const needle = input.value.trim().toLowerCase();
      for (const table of tables) {
        for (const row of table.tBodies[0].rows) {
          row.classList.toggle("hidden", needle !== "" && !row.textContent.toLowerCase().includes(needle));
        }
      }
    });
  }

  // Erasing a user: the button wakes up only once the user id is typed exactly.
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    const input = form.querySelector("input[name=confirm]");
    const button = form.querySelector("button[type=submit]");
    if (!input || !button) continue;
    const sync = () => { button.disabled = input.value !== form.dataset.confirm; };
    input.addEventListener("input", sync);
    sync();
  }
});
