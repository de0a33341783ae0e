// Parts of a page its live stream draws anew (the fleet's cards, the inbox's groups, the
// routines). Drawing a part replaces its elements. Between a press and the click it makes, that
// would swallow the click: the press and the release land on different elements, so the
// browser makes no click of them. While one of its elements has the keyboard's focus, it would
// drop the focus. So a drawing waits while a pointer, or Space or Enter on what they click, is
// pressed, until the click (PRESS_MS at most from the first press: a release the page never
// heard must not stop the page for good), and the focus goes back to the same element.
"use strict";

window.boardLive = (function () {
  const PRESS_MS = 5000;
  const RELEASE_MS = 350; // a tap's click comes a moment after its release
  const PRESSING = new Set([" ", "Enter"]);
  const CLICKED_BY_KEY = "a[href], button, summary, input[type=checkbox], input[type=radio], input[type=submit]";
  const FOCUSABLE = "a[href], button, input, select, textarea, summary, [tabindex]";
  const waiting = new Map(); // the newest drawing of each part, until the press ends
  let pressed = ""; // "pointer" or "key" while one is pressed
  let since = 0; // when the first press of a run of them began
  let timer = 0; // ends a press whose click does not come

  // What a control is, said the same way in the part drawn anew.
  const control = (el) => [
    el.tagName, el.getAttribute("name"), el.getAttribute("href"), el.form?.getAttribute("action"),
    el.tagName === "BUTTON" ? el.textContent.trim() : "",
  ].join("\n");

  function keepingFocus(drawing) {
    const el = document.activeElement;
    const scope = el && el !== document.body ? el.parentElement?.closest("[id]") : null;
    const was = scope && { id: scope.id, control: control(el) };
    drawing();
    if (!was || el.isConnected) return;
    // An element with an id of its own (a message j and k moved to) is found by it.
    const same = el.id ? document.getElementById(el.id) : [
      ...(document.getElementById(was.id)?.querySelectorAll(FOCUSABLE) || []),
    ].find((c) => control(c) === was.control);
    if (!same) return;
    if (el.hasAttribute("tabindex") && !same.hasAttribute("tabindex")) same.tabIndex = el.tabIndex;
    same.focus({ preventScroll: true });
  }
  function ended() {
    clearTimeout(timer);
    pressed = "";
    delete document.body.dataset.waiting;
    const drawings = [...waiting.values()];
    waiting.clear();
    drawings.forEach(keepingFocus);
  }
  const wait = (ms) => { clearTimeout(timer); timer = setTimeout(ended, Math.min(ms, since + PRESS_MS - Date.now())); };
  const press = (by) => {
    if (!pressed) since = Date.now();
    pressed = by;
    wait(PRESS_MS);
  };
  const release = (by) => { if (pressed === by) wait(RELEASE_MS); }; // a key's release ends no pointer's press
  document.addEventListener("pointerdown", () => press("pointer"), true);
  document.addEventListener("keydown", (e) => {
    if (PRESSING.has(e.key) && !e.repeat && e.target instanceof Element && e.target.matches(CLICKED_BY_KEY)) press("key");
  }, true);
  window.addEventListener("pointerup", () => release("pointer"), true);
  window.addEventListener("keyup", (e) => { if (PRESSING.has(e.key)) release("key"); }, true);
  window.addEventListener("click", () => { if (pressed) setTimeout(ended); }, true); // after the click's own work
  window.addEventListener("pointercancel", ended, true);
  window.addEventListener("blur", ended);

  return {
    // Draw a part of the page now, or when the press under way ends: the newest drawing of each
    // part, in the order the parts first waited.
    draw(part, drawing) {
      if (!pressed) { keepingFocus(drawing); return; }
      waiting.set(part, drawing);
      document.body.dataset.waiting = "render";
    },
  };
})();
