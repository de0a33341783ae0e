// Parts of a page its live stream draws anew (the fleet's cards, the inbox's groups, the
// routines). Drawing a part replaces its elements. Between a press and the click it makes, that
// would swallow the click: the press and the release land on different elements, so the
// browser makes no click of them. While one of its elements has the keyboard's focus, it would
// drop the focus. So a drawing waits while a pointer, or Space or Enter on what they click, is
// pressed, until each press's own click (PRESS_MS at most from the first press: a release the
// page never heard must not stop the page for good), and the focus goes back to the same element.
// A box that scrolls in its own right (a bot's log tail, marked data-keep-scroll) would go back
// to its start: one the person scrolled keeps where they scrolled it to.
"use strict";

window.boardLive = (function () {
  const PRESS_MS = 5000;
  const RELEASE_MS = 350; // a tap's click comes a moment after its release
  const PRESSING = new Set([" ", "Enter"]);
  const CLICKED_BY_KEY = "a[href], button, summary, input[type=checkbox], input[type=radio], input[type=submit]";
  const FOCUSABLE = "a[href], button, input, select, textarea, summary, [tabindex]";
  const waiting = new Map(); // the newest drawing of each part, until every press ends
  const pressed = new Map(); // "pointer" and "key", each to the timer that ends it if no click comes
  let cap = 0; // ends every press PRESS_MS after the first of a run of them

  // What a control is, said the same way in the part drawn anew.
  const control = (el) => [
    el.tagName, el.getAttribute("name"), el.getAttribute("href"), el.form?.getAttribute("action"),
    el.tagName === "BUTTON" ? el.textContent.trim() : "",
  ].join("\n");

  // A scrolling box is known by its part's id and what it marks itself as.
  const box = (el) => `${el.parentElement?.closest("[id]")?.id}\n${el.dataset.keepScroll}`;
  const boxes = () => document.querySelectorAll("[data-keep-scroll]");

  function keepingPlace(drawing) {
    const scrolled = new Map([...boxes()].filter((el) => el.scrollTop || el.scrollLeft)
      .map((el) => [box(el), [el.scrollTop, el.scrollLeft]]));
    keepingFocus(drawing);
    if (scrolled.size) boxes().forEach((el) => {
      const at = scrolled.get(box(el));
      if (at) [el.scrollTop, el.scrollLeft] = at;
    });
  }
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
  function ended(by) {
    clearTimeout(pressed.get(by));
    pressed.delete(by);
    if (pressed.size) return; // the other press's click is still to come
    clearTimeout(cap);
    delete document.body.dataset.waiting;
    const drawings = [...waiting.values()];
    waiting.clear();
    drawings.forEach(keepingPlace);
  }
  const endedAll = () => [...pressed.keys()].forEach(ended);
  const press = (by) => {
    if (!pressed.size) cap = setTimeout(endedAll, PRESS_MS);
    clearTimeout(pressed.get(by)); // a release's timer from the press before
    pressed.set(by, 0);
  };
  const release = (by) => {
    if (!pressed.has(by)) return;
    clearTimeout(pressed.get(by));
    pressed.set(by, setTimeout(() => ended(by), RELEASE_MS));
  };
  document.addEventListener("pointerdown", () => press("pointer"), true);
  document.addEventListener("keydown", (e) => {
    if (PRESSING.has(e.key) && !e.repeat && e.target instanceof Element && e.target.matches(CLICKED_BY_KEY)) press("key");
  }, true);
  window.addEventListener("pointerup", () => release("pointer"), true);
  window.addEventListener("keyup", (e) => { if (PRESSING.has(e.key)) release("key"); }, true);
  // A click ends the press that made it (a key's has no pointer count), after the click's own work.
  window.addEventListener("click", (e) => {
    const by = e.detail ? "pointer" : "key";
    if (pressed.has(by)) setTimeout(() => ended(by));
  }, true);
  window.addEventListener("pointercancel", () => ended("pointer"), true);
  window.addEventListener("blur", endedAll);

  return {
    // Draw a part of the page now, or when the press under way ends: the newest drawing of each
    // part, in the order the parts first waited.
    draw(part, drawing) {
      if (!pressed.size) { keepingPlace(drawing); return; }
      waiting.set(part, drawing);
      document.body.dataset.waiting = "render";
    },
  };
})();
