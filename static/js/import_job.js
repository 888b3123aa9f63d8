"use strict";
// The import job page: poll the job until it is done, then show its report (no inline script: CSP).
(function () {
  const root = document.getElementById("import-job");
  const statusEl = document.getElementById("job-status"), messageEl = document.getElementById("job-message");
  const bar = document.getElementById("job-progress"), reportEl = document.getElementById("job-report");
  let done = root.dataset.done === "true";

  function text(tag, value, cls) {
    const el = document.createElement(tag);
    el.textContent = value;
    if (cls) el.className = cls;
    return el;
  }
  function showReport(job) {
    reportEl.replaceChildren();
    const report = job.report || {};
    if (job.error && !report.summary) reportEl.append(text("p", job.error, "error"));
    if (report.summary) reportEl.append(text("p", report.summary, report.problem_total ? "error" : ""));
    if (report.counts && Object.keys(report.counts).length) {
      const list = document.createElement("ul");
      list.id = "report-counts";
      for (const [name, value] of Object.entries(report.counts)) list.append(text("li", name + ": " + value));
      reportEl.append(list);
    }
    if (report.problems && report.problems.length) {
      reportEl.append(text("h2", "Problems (" + report.problem_total + ")"));
      const list = document.createElement("ol");
      list.id = "report-problems";
      for (const p of report.problems) list.append(text("li", p.text));
      reportEl.append(list);
    }
    if (report.warnings && report.warnings.length) {
      reportEl.append(text("h2", "Warnings"));
      const list = document.createElement("ul");
      for (const w of report.warnings) list.append(text("li", w));
      reportEl.append(list);
    }
    if (job.batch && job.status === "succeeded" && !(job.params || {}).dry_run) reportEl.append(text("p", "Batch: " + job.batch));
  }
  async function poll() {
    try {
      const response = await fetch(root.dataset.url, {headers: {"Accept": "application/json"}, credentials: "same-origin"});
      if (response.ok) {
        const job = await response.json();
        statusEl.textContent = job.status;
        messageEl.textContent = job.message || "";
        bar.value = job.progress || 0;
        if (job.done) { done = true; showReport(job); return; }
      }
    } catch (error) { messageEl.textContent = gettext("Connection lost; retrying…"); }
    setTimeout(poll, 1000);
  }
  if (!done) poll();
})();
