// The fleet page: its cards and last orders arrive rendered by the server over Server-Sent
// Events; the start, stop and restart buttons (and a kept worktree's Remove) post their form
// (with its CSRF token) without leaving the page, and the bot (or the worktree) shows the order
// as pending at once, until the next render says what its keeper did.
"use strict";

(function () {
  const machines = document.getElementById("machines");
  if (!machines) return;
  const orders = document.getElementById("last-orders");
  const post = (form, refused) =>
    fetch(form.action, { method: "POST", body: new FormData(form), credentials: "same-origin", redirect: "manual" })
      .then((r) => { if (r.type !== "opaqueredirect") refused(); }, refused); // done: a redirect to /fleet
  machines.addEventListener("submit", (event) => {
    const removal = event.target.closest("form.worktree-action");
    if (removal) {
      // A kept worktree's Remove: the row reads "removing…" until its keeper has done it. One
      // the board knows held uncommitted work asks first: its keeper would refuse it.
      event.preventDefault();
      if (removal.dataset.warning && !window.confirm(removal.dataset.warning)) return;
      const row = removal.closest("tr.worktree");
      const state = row?.querySelector(".worktree-state");
      const button = removal.querySelector("button");
      if (row) row.dataset.removing = "true";
      if (state) { state.className = "badge worktree-state tone-busy"; state.textContent = "removing…"; }
      if (button) button.disabled = true;
      post(removal, () => {
        if (state) { state.className = "badge worktree-state tone-bad"; state.textContent = "not sent"; }
        if (button) button.disabled = false;
      });
      return;
    }
    const form = event.target.closest("form.bot-action");
    if (!form) return;
    event.preventDefault();
    const bot = form.closest("article.bot");
    const badge = bot?.querySelector(".badge.state");
    if (bot && badge) {
      bot.dataset.pending = form.action.split("/").pop();
      badge.className = "badge state tone-busy pending";
      badge.textContent = form.dataset.pending; // the server's word for the order on its way
    }
    const buttons = bot ? bot.querySelectorAll("form.bot-action button") : [];
    buttons.forEach((b) => { b.disabled = true; });
    const refused = () => {
      // Not sent (refused, or the board unreachable): say so, and let the person try again.
      if (badge) { badge.className = "badge state tone-bad"; badge.textContent = "not sent"; }
      buttons.forEach((b) => { b.disabled = false; });
    };
    post(form, refused);
  });
  const source = new EventSource("/fleet/events");
  source.addEventListener("fleet", (e) => {
    const live = JSON.parse(e.data); // rendered and escaped by the server's templates
    machines.innerHTML = live.html;
    if (orders) orders.innerHTML = live.orders;
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
