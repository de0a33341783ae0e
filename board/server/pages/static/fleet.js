// The fleet page: its cards and last orders arrive rendered by the server over Server-Sent
// Events; the start, stop and restart buttons (and a kept worktree's Remove) post their form
// (with its CSRF token) without leaving the page, and the bot (or the worktree) shows the order
// as pending at once, until a render says what its keeper did.
"use strict";

(function () {
  const machines = document.getElementById("machines");
  if (!machines) return;
  const orders = document.getElementById("last-orders");
  const post = (form, refused) =>
    fetch(form.action, { method: "POST", body: new FormData(form), credentials: "same-origin", redirect: "manual" })
      .then((r) => { if (r.type !== "opaqueredirect") refused(); }, refused); // done: a redirect to /fleet

  // How an order shows on what it is for: a bot's card, or a kept worktree's row.
  const LOOKS = {
    bot: {
      badge: ".badge.state", pending: "badge state tone-busy pending", refused: "badge state tone-bad",
      buttons: "form.bot-action button", flag: (el, kind) => { el.dataset.pending = kind; },
    },
    worktree: {
      badge: ".worktree-state", pending: "badge worktree-state tone-busy", refused: "badge worktree-state tone-bad",
      buttons: "form.worktree-action button", flag: (el) => { el.dataset.removing = "true"; },
    },
  };
  const show = (el, look, badgeClass, words, disabled) => {
    const badge = el.querySelector(look.badge);
    if (badge) { badge.className = badgeClass; badge.textContent = words; }
    // Turned off by aria-disabled, not disabled: a disabled button drops the keyboard's focus.
    el.querySelectorAll(look.buttons).forEach((b) => {
      if (disabled) b.setAttribute("aria-disabled", "true");
      else b.removeAttribute("aria-disabled");
    });
  };

  // Orders sent from this tab that no render has shown yet, by the id of what they mark. A
  // render can leave the board before an order is recorded and arrive after the click: it would
  // draw the bot (or the worktree) as it was, its buttons live again. So each unseen order is
  // marked again after every render, until the last orders hold it (an order of its bot, kind
  // and target newer than the newest the tab knew at the click) or what it marks has left the
  // page: from that render on, the board's word stands.
  const unseen = new Map();
  let waiting = null; // the newest render, until it is drawn (it may wait for a click: live.js)
  const parsed = (html) => { const t = document.createElement("template"); t.innerHTML = html; return t; };
  const shownOrders = (root) =>
    root ? [...root.querySelectorAll("li[data-order]")].map((li) => ({ ...li.dataset, id: Number(li.dataset.order) })) : [];
  const holds = (shown, cap, sent) => {
    // Newest first: a full list of orders all newer than the tab knew may have pushed it out.
    if (shown.length >= cap && shown.every((o) => o.id > sent.after)) return true;
    return shown.some((o) => o.id > sent.after && o.handle === sent.handle && o.kind === sent.kind && o.target === sent.target);
  };
  const mark = (sent) => {
    const el = document.getElementById(sent.id);
    if (!el) return false;
    sent.look.flag(el, sent.kind);
    show(el, sent.look, sent.look.pending, sent.words, true);
    return true;
  };
  const orderOf = (form) => {
    // /fleet/bots/{handle}/{action}, or /fleet/bots/{handle}/worktrees/{thread}/remove
    const [, , , handle, action, thread] = new URL(form.action).pathname.split("/").map(decodeURIComponent);
    return action === "worktrees" ? { handle, kind: "remove_worktree", target: thread } : { handle, kind: action, target: "" };
  };
  const send = (form, el, look, words) => {
    // The newest orders this tab knows: a render waiting for this click holds newer ones.
    const known = shownOrders(waiting && orders ? parsed(waiting.orders).content : orders);
    const sent = { ...orderOf(form), id: el.id, look, words, after: Math.max(0, ...known.map((o) => o.id)) };
    unseen.set(sent.id, sent);
    mark(sent);
    post(form, () => {
      // Not sent (refused, or the board unreachable): say so, and let the person try again.
      unseen.delete(sent.id);
      const now = document.getElementById(sent.id);
      if (now) show(now, look, look.refused, "not sent", false);
    });
  };

  machines.addEventListener("submit", (event) => {
    if (event.submitter?.getAttribute("aria-disabled") === "true") { event.preventDefault(); return; } // its order is on its way
    const removal = event.target.closest("form.worktree-action");
    const row = removal?.closest("tr.worktree");
    if (removal && row) {
      // A kept worktree's Remove: the row reads "removing…" until its keeper has done it. One
      // the board knows held uncommitted work asks first: its keeper would refuse it.
      event.preventDefault();
      if (removal.dataset.warning && !window.confirm(removal.dataset.warning)) return;
      send(removal, row, LOOKS.worktree, "removing…");
      return;
    }
    const form = event.target.closest("form.bot-action");
    const bot = form?.closest("article.bot");
    if (!form || !bot) return;
    event.preventDefault();
    send(form, bot, LOOKS.bot, form.dataset.pending); // the server's word for it ("stopping…")
  });

  // A render the same as the last one drawn is not drawn (a reconnected stream's first, most
  // often); the others are drawn by live.js, which keeps the focus and waits for a press to end.
  const drawn = { html: null, orders: null }; // the last render drawn, as the browser writes it
  const draw = (live) => {
    const html = parsed(live.html).innerHTML;
    const list = orders ? parsed(live.orders).innerHTML : "";
    if (html === drawn.html && list === drawn.orders) return;
    machines.innerHTML = html; // both, so that no order's mark outlives the render that saw it
    if (orders) orders.innerHTML = list;
    Object.assign(drawn, { html, orders: list });
    const shown = shownOrders(orders);
    const cap = Number(orders?.querySelector("ul.orders")?.dataset.cap);
    unseen.forEach((sent, id) => { if (holds(shown, cap, sent) || !mark(sent)) unseen.delete(id); });
  };
  const source = new EventSource("/fleet/events");
  source.addEventListener("fleet", (e) => {
    waiting = JSON.parse(e.data); // rendered and escaped by the server's templates
    window.boardLive.draw("fleet", () => {
      if (waiting) draw(waiting);
      waiting = null;
    });
  });
  source.addEventListener("open", () => document.body.classList.add("live"));
  // The session ended (signed out, expired, or its password changed elsewhere).
  source.addEventListener("signed-out", () => { source.close(); location.reload(); });
  source.addEventListener("released", () => {
    // Newer tabs took this one's place under the board's cap: stop instead of fighting them.
    source.close();
    document.body.classList.remove("live");
    const note = document.createElement("p");
    note.className = "paused";
    note.textContent = "Live updates paused: too many tabs are open. Reload to resume.";
    document.querySelector("main")?.prepend(note);
  });
})();
