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
})();
