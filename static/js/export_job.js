/* Sessions export jobs (evaluation/exports/jobs.py) on the report page and the export's own page.
 *
 * Report page: the "Export sessions" form creates the job through the API (filters in the form's query string),
 * then the panel below it follows the job at /api/jobs/<id>/ until it is done and shows the download link. The
 * last job is remembered per batch, so a reload keeps showing it. Without JavaScript the form posts to the
 * export's page, which shows the same panel (reload to refresh).
 * Export page: the panel follows its job the same way.
 */
(function () {
  "use strict";
  const POLL_MS = 1000;
  const csrf = document.querySelector('meta[name="csrf-token"]').content;

  function sizeText(bytes) {
    if (bytes == null) return "";
    const units = ["bytes", "KB", "MB", "GB", "TB"];
    let value = bytes, unit = 0;
    while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
    return (unit ? value.toFixed(1) : String(value)) + " " + units[unit];
  }

  function show(panel, job) {
    panel.hidden = false;
    panel.querySelector(".job-status").textContent = job.status;
    panel.querySelector(".job-message").textContent = job.message || "";
    panel.querySelector(".job-progress").value = job.progress || 0;
    const result = panel.querySelector(".job-result");
    result.replaceChildren();
    const report = job.report || {};
    if (job.status === "succeeded" && report.download_url) {
      const link = document.createElement("a");
      link.href = report.download_url;
      link.setAttribute("download", "");
      link.textContent = report.filename ? interpolate(gettext("Download %(file)s"), {file: report.filename}, true) : gettext("Download the export");
      const sessions = report.sessions === 1 ? "1 session" : report.sessions + " sessions";
      result.append(link, " (" + sessions + ", " + sizeText(report.bytes) + ")");
    } else if (job.status === "failed") {
      const error = document.createElement("span");
      error.className = "error";
      error.textContent = job.error || gettext("The export failed.");
      result.append(error);
    }
  }

  function wait(ms) { return new Promise((resolve) => setTimeout(resolve, ms)); }

  // Poll the job until it is done. `gone` runs when the job cannot be read (deleted, or no longer ours).
  async function follow(panel, url, gone) {
    for (;;) {
      try {
        const response = await fetch(url, {headers: {"Accept": "application/json"}, credentials: "same-origin"});
        if (response.status === 403 || response.status === 404) { if (gone) gone(); return; }
        if (response.ok) {
          const job = await response.json();
          show(panel, job);
          if (job.done) return;
        }
      } catch (error) {
        panel.querySelector(".job-message").textContent = gettext("Connection lost; retrying…");
      }
      await wait(POLL_MS);
    }
  }

  function errorText(body) {
    if (!body) return gettext("The export could not be created.");
    if (body.detail) return body.detail;
    return Object.entries(body).map(([field, problems]) => field + ": " + [].concat(problems).join(" ")).join("; ");
  }

  function setupReport(form) {
    const panel = document.getElementById("export-job");
    const storageKey = "feedback-lab:sessions-export:" + form.dataset.batch;
    const button = form.querySelector("button[type=submit]");

    function track(job) {
      panel.querySelector(".job-id").textContent = job.id;
      panel.querySelector(".job-page").href = form.dataset.jobPage + job.id + "/";
      show(panel, job);
      if (!job.done) follow(panel, job.url, () => { panel.hidden = true; localStorage.removeItem(storageKey); });
    }

    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      button.disabled = true;
      try {
        const response = await fetch(form.dataset.apiUrl, {
          method: "POST",
          credentials: "same-origin",
          headers: {"Content-Type": "application/json", "Accept": "application/json", "X-CSRFToken": csrf},
          body: JSON.stringify({format: form.elements.format.value, gzip: form.elements.gzip.checked}),
        });
        const body = await response.json().catch(() => null);
        if (response.status !== 202) throw new Error(errorText(body));
        localStorage.setItem(storageKey, JSON.stringify({id: body.id, url: body.url}));
        track(body);
      } catch (error) {
        panel.hidden = false;
        panel.querySelector(".job-status").textContent = gettext("not started");
        panel.querySelector(".job-message").textContent = "";
        const result = panel.querySelector(".job-result");
        result.replaceChildren();
        const message = document.createElement("span");
        message.className = "error";
        message.textContent = error.message;
        result.append(message);
      } finally {
        button.disabled = false;
      }
    });

    // The last export of this batch, after a reload.
    let saved = null;
    try { saved = JSON.parse(localStorage.getItem(storageKey) || "null"); } catch (error) { saved = null; }
    if (saved && saved.url) {
      panel.querySelector(".job-id").textContent = saved.id;
      panel.querySelector(".job-page").href = form.dataset.jobPage + saved.id + "/";
      follow(panel, saved.url, () => { panel.hidden = true; localStorage.removeItem(storageKey); });
    }
  }

  const form = document.getElementById("sessions-export");
  if (form) {
    setupReport(form);
  } else {
    const panel = document.getElementById("export-job");
    if (panel && panel.dataset.jobUrl && panel.dataset.done !== "true") follow(panel, panel.dataset.jobUrl);
  }
})();
