"use strict";
// The set-password links page: "Copy all links" puts every "username<TAB>link" line on the clipboard (the text box
// below holds the same lines for copying by hand; no inline script: CSP).
(function () {
  const button = document.getElementById("copy-links"), text = document.getElementById("links-text");
  const status = document.getElementById("copy-status");
  if (!button || !text) return;
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(text.value);
      status.textContent = button.dataset.copied;
    } catch (error) {
      text.focus();
      text.select();
      status.textContent = button.dataset.failed;
    }
  });
})();
