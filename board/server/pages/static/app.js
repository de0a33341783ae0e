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

  const allow = document.getElementById("allow-notifications");
  if (allow) {
    // Asked only from this button: a browser remembers a refusal, so never on load.
    const status = document.getElementById("notify-permission");
    const show = () => {
      status.textContent = "Notification" in window ? "Permission: " + Notification.permission : "This browser has no notifications.";
    };
    allow.addEventListener("click", () => { if ("Notification" in window) Notification.requestPermission().then(show); });
    show();
  }

  if (!body.dataset.me) return; // signed out: no stream
  const workspace = body.dataset.live || "";

  // Unread counts: what this browser last saw per channel and conversation, in localStorage.
  const seenKey = "board-seen:" + workspace;
  const seen = JSON.parse(localStorage.getItem(seenKey) || '{"channel": {}, "conversation": {}}');
  if (!seen.channel) { seen.channel = {}; seen.conversation = {}; }
  const here = body.dataset.channel;
  const hereConversation = body.dataset.conversation;
  // A channel or a conversation opens at its newest roots and the box to post in, as a chat does
  // (roots are listed oldest first), and stays there as roots arrive while it is there. Not on
  // a thread, an anchor, an older page or the welcome steps, which read from the top, nor when
  // the browser brings a page back where it was (back, forward, reload).
  const atEnd = () => window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 80;
  const toEnd = () => window.scrollTo(0, document.documentElement.scrollHeight);
  if ((here || hereConversation) && !body.dataset.thread && !location.hash
      && !new URLSearchParams(location.search).has("before") && !document.getElementById("get-started")
      && (performance.getEntriesByType("navigation")[0]?.type || "navigate") === "navigate") {
    document.addEventListener("DOMContentLoaded", toEnd); // once the other scripts have drawn the box
  }
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
  if (workspace && here) {
    const link = document.querySelector(`[data-channel-link="${CSS.escape(here)}"]`);
    markSeen("channel", here, Number(link?.dataset.lastId || 0));
  }
  if (workspace && hereConversation) {
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
  if (workspace && document.querySelector("[data-unread]")) {
    fillUnread("channel", "/api/channels", "channels", (c) => c.slug, here || "");
    fillUnread("conversation", "/api/conversations", "conversations", (c) => c.id, hereConversation || "");
  }

  function place(html, container) {
    const holder = document.createElement("div");
    holder.innerHTML = html; // rendered and escaped by the server's template
    const node = holder.firstElementChild;
    node.classList.add("fresh");
    const pinned = container.id === "roots" && atEnd();
    container.appendChild(node);
    document.getElementById("no-roots")?.remove();
    if (pinned) toEnd();
    return node;
  }

  function onMessage(data) {
    const m = data.message;
    if (document.getElementById("m" + m.id)) return;
    const thread = body.dataset.thread;
    const threadBox = document.getElementById("thread-messages");
    // A thread shown in part has later replies before this one: the "Later replies" link leads on.
    if (thread && threadBox && !("partial" in threadBox.dataset) && String(m.thread_id) === thread) place(data.html, threadBox);
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
    const text = state === "claimed" ? `claimed by ${holder || "someone"} just now` : state;
    document.querySelectorAll(`[data-claim-for="${m.meta.thread_id}"]`).forEach((badge) => {
      badge.textContent = text;
      badge.className = "claim claim-" + state;
    });
  }

  // The inbox: the count in the navigation and the title, highlighted mentions and DMs,
  // and a browser notification while the tab is hidden (with the human's permission).
  const baseTitle = document.title;
  const forMe = new Set((body.dataset.forMe || "").split(",").filter(Boolean));
  function highlight(id, on) {
    const node = document.getElementById("m" + id);
    if (!node) return;
    node.classList.toggle("for-me", on);
    let button = node.querySelector("button.mark-read");
    if (on && !button) {
      button = document.createElement("button");
      button.type = "button";
      button.className = "mark-read";
      button.textContent = "Mark read";
      button.addEventListener("click", () => markRead(id));
      node.querySelector("header")?.appendChild(button);
    } else if (!on && button) button.remove();
  }
  function markRead(id) {
    fetch("/api/receipts", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify({ message_ids: [Number(id)], state: "seen" }),
    }); // the stream's inbox event clears it, here and in every other tab
  }
  forMe.forEach((id) => highlight(id, true));
  let inboxFrames = 0;
  function onInbox(data) {
    // Every stream's first frame is the inbox as it stood when the stream began to follow it:
    // from here on, what the page shows is kept up to date.
    body.classList.add("live");
    const count = document.getElementById("nav-unread");
    if (count) { count.textContent = String(data.unread); count.hidden = !data.unread; }
    document.title = (data.unread ? `(${data.unread}) ` : "") + baseTitle;
    data.highlight.forEach((id) => { forMe.add(String(id)); highlight(id, true); });
    data.read.forEach((id) => { forMe.delete(String(id)); highlight(id, false); });
    if (document.hidden && "Notification" in window && Notification.permission === "granted") {
      data.notify.forEach((n) => {
        const note = new Notification(n.title, { body: n.body, tag: n.tag });
        note.onclick = () => { window.focus(); location.href = n.url; };
      });
    }
    // The inbox page follows every change; its first frame only when the page was rendered before one.
    const rendered = document.getElementById("inbox-unread")?.dataset.count;
    if (body.dataset.inboxPage && (inboxFrames++ > 0 || String(data.unread) !== rendered)) refresh("inbox-groups");
  }
  let reading = false;
  let again = false;
  function refresh(id) {
    // Read this page again through its own handler and swap in one part of it. A change that
    // comes while a read is under way reads once more after it: that read may predate it.
    if (reading) { again = true; return; }
    reading = true;
    fetch(location.pathname + location.search, { credentials: "same-origin" })
      .then((r) => (r.ok ? r.text() : null))
      .then((html) => {
        const doc = html && new DOMParser().parseFromString(html, "text/html");
        window.boardLive.draw(id, () => { // once no press is under way: live.js
          const fresh = doc && doc.getElementById(id);
          const there = document.getElementById(id);
          if (fresh && there) there.replaceWith(fresh);
          // What the page read highlights now (an inbox group's newest message) is highlighted here.
          (doc?.body.dataset.forMe || "").split(",").filter(Boolean).forEach((m) => { forMe.add(m); highlight(m, true); });
        });
      })
      .finally(() => {
        reading = false;
        if (again) { again = false; refresh(id); }
      });
  }

  const params = new URLSearchParams();
  if (workspace) params.set("workspace", workspace);
  if (forMe.size) params.set("mine", [...forMe].slice(-500).join(","));
  if (body.dataset.cursor) params.set("since", body.dataset.cursor);
  if (body.dataset.follow) params.set("follow", body.dataset.follow);
  const source = new EventSource("/events?" + params);
  source.addEventListener("message", (e) => { const data = JSON.parse(e.data); onMessage(data); if (forMe.has(String(data.message.id))) highlight(data.message.id, true); });
  source.addEventListener("inbox", (e) => onInbox(JSON.parse(e.data)));
  // Something this page shows changed: read the page again and swap in its list.
  if (body.dataset.follow) source.addEventListener("changed", () => refresh(body.dataset.follow));
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
  window.boardCsrf = csrf;
})();
