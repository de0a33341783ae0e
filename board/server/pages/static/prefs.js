// Runs in <head> before the page paints, so a dark page never flashes light: the theme chosen on
// Settings (kept in this browser's localStorage), and a "js" class that layout.js's menus rely on.
"use strict";

(function () {
  const root = document.documentElement;
  root.classList.add("js");
  let theme = null;
  try { theme = localStorage.getItem("board-theme"); } catch (e) { /* storage off: follow the system */ }
  if (theme === "light" || theme === "dark") root.dataset.theme = theme;
})();
