// Keyboard shortcuts on every page: j/k move between messages, r replies to the focused one,
// g i / g f / g r go to the inbox, the fleet and the routines, ? lists them. None fires while
// typing in a field, or with Ctrl, Cmd or Alt held (those belong to the browser).
"use strict";

(function () {
  const GO = { i: ["/inbox", "Inbox"], f: ["/fleet", "Fleet"], r: ["/routines", "Routines"] };
  const KEYS = [
    ["j", "Next message"],
    ["k", "Previous message"],
    ["r", "Reply to the focused message"],
    ...Object.entries(GO).map(([key, [, name]]) => [`g ${key}`, `Go to ${name}`]),
    ["Ctrl+Enter", "Send what you are writing"],
    ["?", "Show this list"],
  ];
  const G_WINDOW_MS = 1500;
  let gAt = 0;

  function typing(target) {
    return target instanceof HTMLElement && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
  }

  function messages() {
    return Array.from(document.querySelectorAll("article.msg"));
  }

  function focused() {
    return document.activeElement?.closest("article.msg") || null;
  }

  function move(step) {
    const all = messages();
    if (!all.length) return;
    const at = all.indexOf(focused());
    const next = at < 0 ? (step > 0 ? 0 : all.length - 1) : Math.min(all.length - 1, Math.max(0, at + step));
    const msg = all[next];
    msg.tabIndex = -1;
    msg.focus({ preventScroll: true });
    msg.scrollIntoView({ block: "nearest" });
  }

  function replyArea(thread) {
    return document.querySelector(`form.compose[action="/t/${CSS.escape(thread)}"] textarea[name=body]`);
  }

  function reply() {
    const msg = focused();
    if (!msg) return;
    const area = replyArea(msg.dataset.thread);
    if (area) {
      area.focus();
      return;
    }
    // Its thread is not open here: open it where the page opens threads, at its reply form.
    const open = msg.querySelector("a.open-thread");
    location.assign((open ? open.getAttribute("href") : `/t/${msg.dataset.thread}`) + "#reply");
  }

  let dialog = null;
  function help() {
    if (!dialog) {
      dialog = document.createElement("dialog");
      dialog.id = "shortcuts";
      dialog.setAttribute("aria-labelledby", "shortcuts-title");
      const title = document.createElement("h2");
      title.id = "shortcuts-title";
      title.textContent = "Keyboard shortcuts";
      const list = document.createElement("dl");
      for (const [keys, what] of KEYS) {
        const term = document.createElement("dt");
        keys.split(" ").forEach((key) => {
          const kbd = document.createElement("kbd");
          kbd.textContent = key;
          term.append(kbd, " ");
        });
        const description = document.createElement("dd");
        description.textContent = what;
        list.append(term, description);
      }
      const close = document.createElement("button");
      close.type = "button";
      close.textContent = "Close";
      close.addEventListener("click", () => dialog.close());
      dialog.append(title, list, close);
      document.body.append(dialog);
    }
    if (!dialog.open) dialog.showModal();
  }

  document.addEventListener("keydown", (e) => {
    if (e.defaultPrevented || e.isComposing || e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
    if (dialog?.open) return; // the dialog has the keyboard until it is closed
    const g = Date.now() - gAt < G_WINDOW_MS;
    gAt = 0;
    if (g && GO[e.key]) {
      e.preventDefault();
      location.assign(GO[e.key][0]);
    } else if (e.key === "g") {
      gAt = Date.now();
    } else if (e.key === "j" || e.key === "k") {
      e.preventDefault();
      move(e.key === "j" ? 1 : -1);
    } else if (e.key === "r") {
      e.preventDefault();
      reply();
    } else if (e.key === "?") {
      e.preventDefault();
      help();
    }
  });

  // Arrived from r on another page: the thread's reply form has the keyboard.
  if (location.hash === "#reply") {
    const area = replyArea(document.body.dataset.thread || "");
    if (area) area.focus();
  }
})();
