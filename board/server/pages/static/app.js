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

  // Copy buttons: the text of the element a button names goes to the clipboard. Over plain
  // HTTP off loopback the Clipboard API is missing, so the text is selected and copied instead.
  function copySelected(source) {
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    try { return document.execCommand("copy"); } catch (e) { return false; }
  }
  document.querySelectorAll("button[data-copy]").forEach((button) => {
    button.addEventListener("click", () => {
      const source = document.getElementById(button.dataset.copy);
      if (!source) return;
      const said = (ok) => {
        button.textContent = ok ? "Copied" : "Selected: press Ctrl+C";
        setTimeout(() => { button.textContent = "Copy"; }, 2500);
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(source.textContent).then(() => said(true), () => said(copySelected(source)));
      } else {
        said(copySelected(source));
      }
    });
  });

  // Tabs (role=tablist): a click or the arrow, Home and End keys show one panel; the address
  // keeps it (#panel-id), so a reload or a shared link opens the same tab.
  document.querySelectorAll("[role=tablist]").forEach((list) => {
    const tabs = Array.from(list.querySelectorAll("[role=tab]"));
    const select = (tab, focus) => {
      tabs.forEach((t) => {
        const on = t === tab;
        t.setAttribute("aria-selected", String(on));
        t.tabIndex = on ? 0 : -1;
        document.getElementById(t.getAttribute("aria-controls")).hidden = !on;
      });
      if (focus) tab.focus();
      history.replaceState(null, "", "#" + tab.getAttribute("aria-controls"));
    };
    tabs.forEach((tab, i) => {
      tab.addEventListener("click", () => select(tab, false));
      tab.addEventListener("keydown", (e) => {
        const to = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1 }[e.key];
        if (to === undefined) return;
        e.preventDefault();
        select(tabs[(to + tabs.length) % tabs.length], true);
      });
    });
    const asked = tabs.find((t) => "#" + t.getAttribute("aria-controls") === location.hash);
    if (asked) select(asked, false);
  });

  const workspace = body.dataset.live;
  if (!workspace) return;

  // Unread counts: what this browser last saw per channel and conversation, in localStorage.
  const seenKey = "board-seen:" + workspace;
  const seen = JSON.parse(localStorage.getItem(seenKey) || '{"channel": {}, "conversation": {}}');
  if (!seen.channel) { seen.channel = {}; seen.conversation = {}; }
  const here = body.dataset.channel;
  const hereConversation = body.dataset.conversation;
  function markSeen(kind, key, id) {
    if (!key || !id) return;
    seen[kind][key] = Math.max(seen[kind][key] || 0, id);
    localStorage.setItem(seenKey, JSON.stringify(seen));
  }
  function badge(kind, key) {
    const attr = kind === "channel" ? "data-unread" : "data-unread-conversation";
    return document.querySelector(`[${attr}="${CSS.escape(String(key))}"]`);
  }
  function showUnread(kind, key, count) {
    const b = badge(kind, key);
    if (!b) return;
    b.textContent = String(count);
    b.hidden = !count;
  }
  if (here) {
    const link = document.querySelector(`[data-channel-link="${CSS.escape(here)}"]`);
    markSeen("channel", here, Number(link?.dataset.lastId || 0));
  }
  if (hereConversation) {
    const link = document.querySelector(`[data-conversation-link="${CSS.escape(hereConversation)}"]`);
    markSeen("conversation", hereConversation, Number(link?.dataset.lastId || 0));
  }
  function fillUnread(kind, path, noun, keyOf, current) {
    const list = Object.entries(seen[kind]).map(([key, id]) => `${key}:${id}`).join(",");
    const params = new URLSearchParams({ workspace, seen: list || "0:0" });
    fetch(path + "?" + params, { credentials: "same-origin" })
      .then((r) => (r.ok ? r.json() : { [noun]: [] }))
      .then((page) => page[noun].forEach((item) => {
        if (String(keyOf(item)) !== current) showUnread(kind, keyOf(item), item.unread || 0);
      }));
  }
  if (document.querySelector("[data-unread]")) {
    fillUnread("channel", "/api/channels", "channels", (c) => c.slug, here || "");
    fillUnread("conversation", "/api/conversations", "conversations", (c) => c.id, hereConversation || "");
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
          const replies = Number(count.textContent) + 1;
          count.textContent = String(replies);
          const word = count.nextElementSibling;
          if (word && word.classList.contains("reply-word")) word.textContent = replies === 1 ? "reply" : "replies";
        });
      }
    }
    if (m.kind === "event" && m.meta && m.meta.claim) updateClaim(m);
    if (m.author_kind === "bot") refreshOpen(`[data-delivery-thread="${m.thread_id}"]`);
    const roots = document.getElementById("roots");
    const kind = m.channel ? "channel" : "conversation";
    const key = m.channel || String(m.conversation);
    const inView = key === (kind === "channel" ? here : hereConversation);
    if (inView) markSeen(kind, key, m.id);
    if (m.reply_to === null && roots && inView) {
      const node = place(data.html, roots);
      const open = node.querySelector("a.open-thread");
      if (open && body.dataset.here) open.href = body.dataset.here + "&thread=" + m.id;
    } else if (!inView && m.kind !== "event" && m.author !== body.dataset.me) {
      const b = badge(kind, key);
      if (b) showUnread(kind, key, Number(b.textContent || 0) + 1);
    }
    refreshDelivery(m.id); // a placed item's chips: the event carries none
  }

  // Delivery chips: one per bot a message is addressed to, read again from the message's
  // own API answer when the board says its states moved (event: delivery) or a bot posts.
  const FINAL = ["replied", "failed", "held"];
  function fillDelivery(box, states) {
    box.replaceChildren(...states.map((d) => {
      const chip = document.createElement("span");
      chip.className = "chip chip-" + d.state;
      chip.dataset.state = d.state;
      chip.dataset.handle = d.handle;
      if (d.reason) chip.title = d.reason;
      chip.textContent = `${d.handle}: ${d.state}`;
      return chip;
    }));
  }
  function refreshDelivery(id) {
    const boxes = document.querySelectorAll(`[data-delivery-for="${CSS.escape(String(id))}"]`);
    if (!boxes.length) return;
    fetch(`/api/messages/${id}`, { credentials: "same-origin" })
      .then((r) => (r.ok ? r.json() : null))
      .then((m) => { if (m) boxes.forEach((box) => fillDelivery(box, m.delivery || [])); });
  }
  function refreshOpen(select) {
    // The chips not at a final state among those select names: each message read once.
    const ids = new Set();
    document.querySelectorAll(select).forEach((box) => {
      const chips = [...box.children];
      if (!chips.length || chips.some((c) => !FINAL.includes(c.dataset.state))) ids.add(box.dataset.deliveryFor);
    });
    ids.forEach(refreshDelivery);
  }

  function updateClaim(m) {
    const states = { claim: "claimed", release: "open", expire: "open", done: "done", handoff: "claimed" };
    const state = states[m.meta.claim];
    if (!state) return; // a nudge changes no holder
    // A claim names its claimer in meta.by; a handoff mentions whom it went to.
    const holder = m.meta.claim === "handoff" ? (m.mentions || [])[0] : m.meta.by || m.author;
    const text = state === "claimed" ? `claimed by ${holder || "someone"} for 0 s` : state;
    document.querySelectorAll(`[data-claim-for="${m.meta.thread_id}"]`).forEach((badge) => {
      badge.textContent = text;
      badge.className = "claim claim-" + state;
    });
  }

  const params = new URLSearchParams({ workspace });
  if (body.dataset.cursor) params.set("since", body.dataset.cursor);
  if (body.dataset.follow) params.set("follow", body.dataset.follow);
  const source = new EventSource("/events?" + params);
  source.addEventListener("message", (e) => onMessage(JSON.parse(e.data)));
  if (body.dataset.follow) {
    // Something this page shows changed: read the page again and swap in its list.
    let reading = false;
    source.addEventListener("changed", () => {
      if (reading) return;
      reading = true;
      fetch(location.pathname + location.search, { credentials: "same-origin" })
        .then((r) => (r.ok ? r.text() : null))
        .then((html) => {
          const fresh = html && new DOMParser().parseFromString(html, "text/html").getElementById(body.dataset.follow);
          const here = document.getElementById(body.dataset.follow);
          if (fresh && here) here.replaceWith(fresh);
        })
        .finally(() => { reading = false; });
    });
  }
  source.addEventListener("delivery", (e) => {
    const id = Number(e.data);
    if (id) refreshDelivery(id);
    else refreshOpen("[data-delivery-for]"); // a bot waits again: its unreachable ones are queued
  });
  source.addEventListener("reset", () => { source.close(); location.reload(); });
  // The session ended (signed out here or in another tab, or its password changed).
  source.addEventListener("signed-out", () => { source.close(); location.reload(); });
  source.addEventListener("released", () => {
    // Newer tabs took this one's place under the board's cap: stop instead of fighting them.
    source.close();
    body.classList.remove("live");
    const note = document.createElement("p");
    note.className = "paused";
    note.textContent = "Live updates paused: too many tabs are open. Reload to resume.";
    document.querySelector("main")?.prepend(note);
  });
  source.addEventListener("open", () => body.classList.add("live"));
  window.boardCsrf = csrf;
})();
