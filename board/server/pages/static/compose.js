// The post and reply forms (form.compose): Ctrl/Cmd+Enter sends, a preview the board renders,
// @-mention completion from the workspace's handles, and drafts kept across a reload.
// The form still posts as a plain form; this script only adds to it. The preview's HTML comes
// from POST /api/preview, the renderer the board renders posted messages with: no Markdown here.
"use strict";

(function () {
  const csrf = document.querySelector('meta[name="csrf-token"]')?.content || "";
  const workspace = document.body.dataset.live || "";
  const SENDING = "board-sending"; // sessionStorage: the draft a form is posting right now
  const MENTION = /(?:^|[^\w@])@([A-Za-z0-9._-]{0,32})$/; // posting.MENTION, up to the caret
  const MENTION_LIMIT = 8;

  function draftKey(form) {
    const data = new FormData(form);
    const path = new URL(form.action, location.href).pathname;
    return `board-draft:${path}|${data.get("workspace") || ""}|${data.get("conversation") || ""}`;
  }

  // A post that went through lands on a page of the board; a refused one on its form, shown
  // again with the refusal, or on the error page.
  // Either way the page after a send is the one to say whether its draft is spent.
  function settleSending() {
    const pending = JSON.parse(sessionStorage.getItem(SENDING) || "null");
    sessionStorage.removeItem(SENDING);
    if (!pending || document.querySelector(".card.error[data-code], form.compose .refusal[data-code]")) return;
    if (localStorage.getItem(pending.key) === pending.text) localStorage.removeItem(pending.key);
  }

  function element(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
    if (text) node.textContent = text;
    return node;
  }

  function enhance(form, index) {
    const area = form.querySelector("textarea[name=body]");
    if (!area) return;
    const key = draftKey(form);
    if (!area.value) area.value = localStorage.getItem(key) || "";

    const bar = element("div", { class: "compose-bar" });
    const toggle = element("button", {
      type: "button", class: "preview-toggle", "aria-pressed": "false", "aria-controls": `preview-${index}`,
    }, "Preview");
    const hint = element("span", { class: "compose-hint" }, "Ctrl+Enter sends · ? for shortcuts");
    const preview = element("div", {
      id: `preview-${index}`, class: "preview body", role: "region", "aria-label": "Preview", "aria-live": "polite",
    });
    preview.hidden = true;
    const list = element("ul", { id: `mentions-${index}`, class: "mentions", role: "listbox", "aria-label": "Mention" });
    list.hidden = true;
    area.setAttribute("aria-autocomplete", "list");
    area.setAttribute("aria-controls", list.id);
    area.after(list);
    const submit = form.querySelector("button[type=submit]");
    bar.append(toggle, hint);
    if (submit) bar.append(submit);
    list.after(bar);
    bar.after(preview);

    // Preview: asked of the board while shown, a moment after typing stops.
    let previewTimer = 0;
    let rendered = 0;
    async function render() {
      const mine = ++rendered;
      const text = area.value;
      if (!text.trim()) {
        preview.replaceChildren(element("p", { class: "empty" }, "Nothing to preview."));
        return;
      }
      const r = await fetch("/api/preview", {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
        body: JSON.stringify({ body: text }),
      });
      const data = await r.json();
      if (mine !== rendered) return; // a later keystroke asked again
      if (r.ok) preview.innerHTML = data.html; // rendered and made safe by the board
      else preview.replaceChildren(element("p", { class: "preview-error", role: "alert" }, data.error.message));
    }
    toggle.addEventListener("click", () => {
      const on = preview.hidden;
      preview.hidden = !on;
      toggle.setAttribute("aria-pressed", String(on));
      if (on) render();
    });

    // Mentions: handles of the page's workspace that start with what follows the @.
    let options = [];
    let active = -1;
    let mentionTimer = 0;
    let asked = 0;
    function closeList() {
      list.hidden = true;
      list.replaceChildren();
      options = [];
      active = -1;
      area.removeAttribute("aria-activedescendant");
    }
    function choose(index) {
      const handle = options[index];
      const before = area.value.slice(0, area.selectionStart);
      const found = MENTION.exec(before);
      if (!handle || !found) return closeList();
      const start = before.length - found[1].length;
      const rest = area.value.slice(area.selectionStart);
      area.value = before.slice(0, start) + handle + " " + rest;
      area.selectionStart = area.selectionEnd = start + handle.length + 1;
      closeList();
      area.dispatchEvent(new Event("input"));
    }
    function highlight(index) {
      active = index;
      list.querySelectorAll("[role=option]").forEach((option, i) => option.setAttribute("aria-selected", String(i === index)));
      area.setAttribute("aria-activedescendant", `${list.id}-${index}`);
    }
    async function suggest() {
      const found = MENTION.exec(area.value.slice(0, area.selectionStart));
      if (!found || !workspace) return closeList();
      const params = new URLSearchParams({ workspace, prefix: found[1], limit: String(MENTION_LIMIT) });
      const mine = ++asked;
      const r = await fetch("/api/agents?" + params, { credentials: "same-origin" });
      const handles = r.ok ? (await r.json()).agents.map((a) => a.handle) : [];
      if (mine !== asked) return; // a later keystroke asked again
      if (!handles.length || !MENTION.test(area.value.slice(0, area.selectionStart))) return closeList();
      options = handles;
      list.replaceChildren(...handles.map((handle, i) => {
        const option = element("li", { id: `${list.id}-${i}`, role: "option", "aria-selected": "false" }, "@" + handle);
        option.addEventListener("mousedown", (e) => { e.preventDefault(); choose(i); });
        return option;
      }));
      list.hidden = false;
      highlight(0);
    }

    area.addEventListener("input", () => {
      if (area.value) localStorage.setItem(key, area.value);
      else localStorage.removeItem(key);
      clearTimeout(mentionTimer);
      mentionTimer = setTimeout(suggest, 150);
      if (!preview.hidden) {
        clearTimeout(previewTimer);
        previewTimer = setTimeout(render, 300);
      }
    });
    area.addEventListener("blur", () => setTimeout(closeList, 100));
    area.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        closeList();
        form.requestSubmit();
        return;
      }
      if (list.hidden) return;
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        e.preventDefault();
        highlight((active + (e.key === "ArrowDown" ? 1 : options.length - 1)) % options.length);
      } else if (e.key === "Enter" || e.key === "Tab") {
        e.preventDefault();
        choose(active);
      } else if (e.key === "Escape") {
        e.preventDefault();
        closeList();
      }
    });
    form.addEventListener("submit", () => {
      sessionStorage.setItem(SENDING, JSON.stringify({ key, text: area.value }));
    });
  }

  settleSending();
  document.querySelectorAll("form.compose").forEach(enhance);
})();
