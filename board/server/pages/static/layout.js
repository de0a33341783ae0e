// Layout that every page shares: the menu button of a narrow window, the board's channel button,
// table cells labelled for stacked rows, times kept relative, and the Settings page's display
// choices (theme and time zone, kept in this browser's localStorage).
"use strict";

(function () {
  const THEME = "board-theme";
  const ZONE = "board-zone";
  function stored(key) {
    try { return localStorage.getItem(key) || ""; } catch (e) { return ""; }
  }

  // A button that shows or hides the element it controls. Escape closes it, from the button as
  // from within (just opened, the focus is still on the button), and gives focus back.
  document.querySelectorAll("button[aria-controls][aria-expanded]").forEach((button) => {
    const target = document.getElementById(button.getAttribute("aria-controls"));
    if (!target) return;
    const set = (open) => {
      button.setAttribute("aria-expanded", String(open));
      target.classList.toggle("open", open);
    };
    button.addEventListener("click", () => set(button.getAttribute("aria-expanded") !== "true"));
    const close = (e) => {
      if (e.key !== "Escape" || button.getAttribute("aria-expanded") !== "true") return;
      set(false);
      button.focus();
    };
    button.addEventListener("keydown", close);
    target.addEventListener("keydown", close);
  });

  // Stacked table rows on a phone say which column each cell is: copy the header's words.
  function label(scope) {
    scope.querySelectorAll("table").forEach((table) => {
      if (table.closest(".body, .preview, .doc-body")) return; // a message's or a document's own table keeps its columns
      const heads = Array.from(table.querySelectorAll("thead th"), (th) => th.textContent.trim());
      if (!heads.length) return;
      table.querySelectorAll("tbody tr").forEach((row) => {
        Array.from(row.children).forEach((cell, i) => {
          if (heads[i] && !cell.hasAttribute("data-label") && !cell.hasAttribute("colspan")) cell.dataset.label = heads[i];
        });
      });
    });
  }

  // Times: relative words as the server writes them, the exact time on hover in the chosen zone.
  const zone = stored(ZONE);
  let exact;
  try {
    exact = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "long", timeZone: zone || undefined });
  } catch (e) {
    exact = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "long" }); // a zone gone from this browser
  }
  const units = [[86400, "d"], [3600, "h"], [60, "min"], [1, "s"]];
  function words(at, now) {
    const seconds = Math.trunc((now - at) / 1000);
    const size = Math.abs(seconds);
    if (size < 10) return "just now";
    const [step, unit] = units.find(([s]) => size >= s);
    const count = Math.floor(size / step);
    return seconds > 0 ? `${count} ${unit} ago` : `in ${count} ${unit}`;
  }
  function times(scope) {
    const now = Date.now();
    scope.querySelectorAll("time[datetime]").forEach((t) => {
      const at = Date.parse(t.dateTime);
      if (Number.isNaN(at)) return;
      t.textContent = words(at, now);
      t.title = exact.format(at);
    });
  }
  label(document);
  times(document);
  setInterval(() => times(document), 15000);
  // Items placed live (app.js, fleet.js) get the same treatment as the page they join.
  new MutationObserver((changes) => changes.forEach((change) => change.addedNodes.forEach((node) => {
    if (node.nodeType !== Node.ELEMENT_NODE) return;
    label(node.closest("table") || node);
    times(node.parentNode || node);
  }))).observe(document.body, { childList: true, subtree: true });

  // Settings: the display choices, applied at once and kept for the next page.
  const themeChoice = document.getElementById("theme-choice");
  if (themeChoice) {
    themeChoice.value = stored(THEME) || "system";
    themeChoice.addEventListener("change", () => {
      const theme = themeChoice.value;
      try {
        if (theme === "system") localStorage.removeItem(THEME); else localStorage.setItem(THEME, theme);
      } catch (e) { /* storage off: this page only */ }
      if (theme === "system") delete document.documentElement.dataset.theme;
      else document.documentElement.dataset.theme = theme;
    });
  }
  const zoneChoice = document.getElementById("zone-choice");
  if (zoneChoice) {
    const here = Intl.DateTimeFormat().resolvedOptions().timeZone;
    zoneChoice.options[0].textContent = `This browser's (${here})`;
    (Intl.supportedValuesOf ? Intl.supportedValuesOf("timeZone") : []).forEach((name) => zoneChoice.add(new Option(name, name)));
    zoneChoice.value = zone;
    zoneChoice.addEventListener("change", () => {
      try {
        if (zoneChoice.value) localStorage.setItem(ZONE, zoneChoice.value); else localStorage.removeItem(ZONE);
      } catch (e) { /* storage off */ }
      location.reload(); // every time on the page, in the new zone
    });
  }
})();
