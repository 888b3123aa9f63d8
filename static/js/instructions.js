// The batch's instructions: open the first time, then as the annotator last left them (per batch, in this browser).
(function () {
  "use strict";
  const box = document.getElementById("instructions");
  if (!box) return;
  const key = box.dataset.remember;
  const stored = localStorage.getItem(key);
  if (stored !== null) box.open = stored === "open";
  box.addEventListener("toggle", () => localStorage.setItem(key, box.open ? "open" : "closed"));
})();
