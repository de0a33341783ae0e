// The fleet page: its cards arrive rendered by the server over Server-Sent Events; the start,
// stop and restart buttons post their form (with its CSRF token) without leaving the page.
"use strict";

(function () {
  const machines = document.getElementById("machines");
  if (!machines) return;
  machines.addEventListener("submit", (event) => {
    const form = event.target.closest("form.bot-action");
    if (!form) return;
    event.preventDefault();
    form.querySelector("button").disabled = true;
    fetch(form.action, { method: "POST", body: new FormData(form), credentials: "same-origin", redirect: "manual" });
  });
  const source = new EventSource("/fleet/events");
  source.addEventListener("fleet", (e) => {
    machines.innerHTML = JSON.parse(e.data).html; // rendered and escaped by the server's template
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
