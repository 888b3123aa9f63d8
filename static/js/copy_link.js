// Copy buttons: a button with data-copy="<input id>" copies that read-only field's text and says so in the page's
// status line (#copy-status, read by screen readers) and on the button itself for a moment.
(() => {
  "use strict";
  const status = document.getElementById("copy-status");

  async function copy(input) {
    try {
      await navigator.clipboard.writeText(input.value);
      return true;
    } catch (e) {
      input.focus(); input.select(); // no clipboard API (an insecure origin): the old way, or select it for Ctrl+C
      try { return document.execCommand("copy"); } catch (e2) { return false; }
    }
  }

  document.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-copy]");
    if (!button) return;
    const input = document.getElementById(button.dataset.copy);
    const label = document.querySelector(`label[for="${input.id}"]`);
    const what = label ? label.firstChild.textContent.trim() : "";
    const copied = await copy(input);
    const message = copied ? interpolate(gettext("%(what)s copied."), {what}, true)
      : gettext("Could not copy: the link is selected, press Ctrl+C.");
    if (status) status.textContent = message;
    if (copied) {
      button.classList.add("copied");
      setTimeout(() => button.classList.remove("copied"), 2000);
    }
  });
})();
