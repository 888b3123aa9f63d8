"use strict";
// The import job page: poll the job until it is done, then show the result the server renders (its labels, links
// and translations in one place: annotate/imports/display.py) without reloading the page (no inline script: CSP).
(function () {
  const root = document.getElementById("import-job");
  const statusEl = document.getElementById("job-status"), messageEl = document.getElementById("job-message");
  const bar = document.getElementById("job-progress"), reportEl = document.getElementById("job-report");

  async function showResult() {
    const response = await fetch(window.location.href, {credentials: "same-origin"});
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
    const report = fresh.getElementById("job-report"), status = fresh.getElementById("job-status");
    if (!response.ok || !report || !status) throw new Error("no result");
    statusEl.textContent = status.textContent;
    for (const id of ["job-running", "job-progress"]) document.getElementById(id)?.remove();
    reportEl.replaceChildren(...Array.from(report.childNodes).map((node) => document.importNode(node, true)));
  }
  async function poll() {
    try {
      const response = await fetch(root.dataset.url, {headers: {"Accept": "application/json"}, credentials: "same-origin"});
      if (response.ok) {
        const job = await response.json();
        if (job.done) { await showResult(); return; }
        messageEl.textContent = job.message || "";
        bar.value = job.progress || 0;
      }
    } catch (error) { if (messageEl) messageEl.textContent = gettext("Connection lost; retrying…"); }
    setTimeout(poll, 1000);
  }
  if (root.dataset.done !== "true") poll();
})();
