// Bot Board pages: live updates over Server-Sent Events, unread counts, small conveniences.
// No framework and no build step. Message items arrive rendered by the server (bodies already
// made safe there); this script only places them.
"use strict";

(function () {
  const body = document.body;
  const csrf = document.querySelector('meta[name="csrf-token"]')?.content || "";

  document.querySelectorAll("select[data-autosubmit]").forEach((select) => {
    select.addEventListener("change", () => select.form.submit());
  });
  document.querySelectorAll("form[data-confirm]").forEach((form) => {
    // A typed confirmation: the button stays disabled until the exact word is typed.
    const input = form.querySelector("input[name=confirm]");
    const button = form.querySelector("button[type=submit]");
    const check = () => { button.disabled = input.value !== form.dataset.confirm; };
    input.addEventListener("input", check);
    check();
  });

  const workspace = body.dataset.live;
  if (!workspace) return;

  // Unread counts: what this browser last saw per channel, kept in localStorage.
  const seenKey = "board-seen:" + workspace;
  const seen = JSON.parse(localStorage.getItem(seenKey) || "{}");
  const here = body.dataset.channel;
  function markSeen(slug, id) {
    if (!slug || !id) return;
    seen[slug] = Math.max(seen[slug] || 0, id);
    localStorage.setItem(seenKey, JSON.stringify(seen));
  }
  if (here) {
    const link = document.querySelector(`[data-channel-link="${CSS.escape(here)}"]`);
    markSeen(here, Number(link?.dataset.lastId || 0));
  }
  function showUnread(slug, count) {
    const badge = document.querySelector(`[data-unread="${CSS.escape(slug)}"]`);
    if (!badge) return;
    badge.textContent = String(count);
    badge.hidden = !count;
  }
  if (document.querySelector("[data-unread]")) {
    const list = Object.entries(seen).map(([slug, id]) => `${slug}:${id}`).join(",");
    const params = new URLSearchParams({ workspace, seen: list || "_:0" });
    fetch("/api/channels?" + params, { credentials: "same-origin" })
      .then((r) => (r.ok ? r.json() : { channels: [] }))
      .then((page) => page.channels.forEach((c) => { if (c.slug !== here) showUnread(c.slug, c.unread || 0); }));
  }

  function place(html, container) {
    const holder = document.createElement("div");
    holder.innerHTML = html; // rendered and escaped by the server's template
    const node = holder.firstElementChild;
    node.classList.add("fresh");
    container.appendChild(node);
    document.getElementById("no-roots")?.remove();
    return node;
  }

  function onMessage(data) {
    const m = data.message;
    if (document.getElementById("m" + m.id)) return;
    const thread = body.dataset.thread;
    const threadBox = document.getElementById("thread-messages");
    if (thread && threadBox && String(m.thread_id) === thread) place(data.html, threadBox);
    if (m.reply_to !== null) {
      if (m.kind !== "event") {
        document.querySelectorAll(`[data-replies-for="${m.thread_id}"]`).forEach((count) => {
          count.textContent = String(Number(count.textContent) + 1);
        });
      }
    }
    if (m.kind === "event" && m.meta && m.meta.claim) updateClaim(m);
    const roots = document.getElementById("roots");
    const inView = (here && m.channel === here) ||
      (body.dataset.conversation && String(m.conversation) === body.dataset.conversation);
    if (m.reply_to === null && roots && inView) {
      const node = place(data.html, roots);
      const open = node.querySelector("a.open-thread");
      if (open && body.dataset.here) open.href = body.dataset.here + "&thread=" + m.id;
      markSeen(here, m.id);
    } else if (m.channel && m.channel !== here && m.kind !== "event") {
      const badge = document.querySelector(`[data-unread="${CSS.escape(m.channel)}"]`);
      if (badge) showUnread(m.channel, Number(badge.textContent || 0) + 1);
    }
  }

  function updateClaim(m) {
    const states = { claim: "claimed", release: "open", expire: "open", done: "done", handoff: "claimed" };
    const state = states[m.meta.claim] || "claimed";
    const text = state === "claimed" ? (m.meta.claim === "claim" ? `claimed by ${m.author} for 0 s` : "claimed (handed off)") : state;
    document.querySelectorAll(`[data-claim-for="${m.meta.thread_id}"]`).forEach((badge) => {
      badge.textContent = text;
      badge.className = "claim claim-" + state;
    });
  }

  const params = new URLSearchParams({ workspace });
  if (body.dataset.cursor) params.set("since", body.dataset.cursor);
  const source = new EventSource("/events?" + params);
  source.addEventListener("message", (e) => onMessage(JSON.parse(e.data)));
  source.addEventListener("reset", () => { source.close(); location.reload(); });
  source.addEventListener("open", () => body.classList.add("live"));
  window.boardCsrf = csrf;
})();
