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

  // Orders sent from this tab that no render has shown yet, by the id of what they mark. A
  // render can leave the board before an order is recorded and arrive after the click: it would
  // draw the bot (or the worktree) as it was, its buttons live again. So each unseen order is
  // marked again after every render, until the last orders hold it: an order of its bot, kind
  // and target newer than any this tab knew at the click. That render says what became of it.
  const unseen = new Map();
  const shownOrders = () =>
    orders ? [...orders.querySelectorAll("li[data-order]")].map((li) => ({ ...li.dataset, id: Number(li.dataset.order) })) : [];
  const newestOrder = () => Math.max(0, ...shownOrders().map((o) => o.id));
  const holds = (sent) => {
    const shown = shownOrders();
    const list = orders?.querySelector("ul.orders");
    // Newest first: a full list whose every order came after the click has pushed this one out.
    if (list && shown.length >= Number(list.dataset.cap) && shown.every((o) => o.id > sent.after)) return true;
    return shown.some((o) => o.id > sent.after && o.handle === sent.handle && o.kind === sent.kind && o.target === sent.target);
  };
  const send = (form, id, mark, refused) => {
    const [, , , handle, ...rest] = new URL(form.action).pathname.split("/").map(decodeURIComponent); // /fleet/bots/{handle}/…
    const kind = rest[0] === "worktrees" ? "remove_worktree" : rest[0];
    const sent = { handle, kind, target: rest[0] === "worktrees" ? rest[1] : "", after: newestOrder(), mark };
    unseen.set(id, sent);
    mark(document.getElementById(id));
    post(form, () => {
      // Not sent (refused, or the board unreachable): say so, and let the person try again.
      unseen.delete(id);
      refused(document.getElementById(id));
    });
  };

  const markRemoving = (row) => {
    if (!row) return;
    row.dataset.removing = "true";
    const state = row.querySelector(".worktree-state");
    if (state) { state.className = "badge worktree-state tone-busy"; state.textContent = "removing…"; }
    row.querySelectorAll("form.worktree-action button").forEach((b) => { b.disabled = true; });
  };
  const markPending = (action, words) => (bot) => {
    if (!bot) return;
    bot.dataset.pending = action;
    const badge = bot.querySelector(".badge.state");
    if (badge) { badge.className = "badge state tone-busy pending"; badge.textContent = words; }
    bot.querySelectorAll("form.bot-action button").forEach((b) => { b.disabled = true; });
  };
  const notSent = (badgeSelector, buttonSelector) => (element) => {
    const badge = element?.querySelector(badgeSelector);
    if (badge) { badge.classList.remove("tone-busy", "pending"); badge.classList.add("tone-bad"); badge.textContent = "not sent"; }
    element?.querySelectorAll(buttonSelector).forEach((b) => { b.disabled = false; });
  };

  machines.addEventListener("submit", (event) => {
    const removal = event.target.closest("form.worktree-action");
    if (removal) {
      // A kept worktree's Remove: the row reads "removing…" until its keeper has done it. One
      // the board knows held uncommitted work asks first: its keeper would refuse it.
      event.preventDefault();
      if (removal.dataset.warning && !window.confirm(removal.dataset.warning)) return;
      const row = removal.closest("tr.worktree");
      if (row) send(removal, row.id, markRemoving, notSent(".worktree-state", "form.worktree-action button"));
      return;
    }
    const form = event.target.closest("form.bot-action");
    if (!form) return;
    event.preventDefault();
    const bot = form.closest("article.bot");
    const action = new URL(form.action).pathname.split("/").pop();
    // data-pending: the server's word for the order on its way ("stopping…").
    if (bot) send(form, bot.id, markPending(action, form.dataset.pending), notSent(".badge.state", "form.bot-action button"));
  });
  const source = new EventSource("/fleet/events");
  source.addEventListener("fleet", (e) => {
    const live = JSON.parse(e.data); // rendered and escaped by the server's templates
    machines.innerHTML = live.html;
    if (orders) orders.innerHTML = live.orders;
    unseen.forEach((sent, id) => {
      if (holds(sent)) unseen.delete(id);
      else sent.mark(document.getElementById(id));
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
