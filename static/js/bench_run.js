// A bench run's progress panel: polls the run's API while it works, reloads once it has ended (for the tables).
(function () {
  "use strict";
  const root = document.getElementById("bench-run");
  if (!root) return;
  const $ = (id) => document.getElementById(id);
  const working = (status) => status === "queued" || status === "running";
  if (!working(root.dataset.status)) return;
  async function poll() {
    try {
      const response = await fetch(root.dataset.api, {credentials: "same-origin"});
      if (response.ok) {
        const run = await response.json();
        const p = run.progress;
        $("run-status").textContent = run.status;
        // "Done" beside the status "done" says nothing more
        $("run-message").textContent = run.message.toLowerCase() === run.status ? "" : run.message;
        $("run-calls").textContent = p.model_calls;
        const of = (a, b) => interpolate(gettext("%(done)s of %(total)s"), {done: a, total: b}, true);
        $("run-sessions").textContent = of(p.sessions_done, p.sessions);
        $("run-lanes").textContent = of(p.lanes_done, p.lanes);
        $("run-bar").max = p.lanes; $("run-bar").value = p.lanes_done;
        if (run.error) { $("run-error").hidden = false; $("run-error").textContent = run.error; }
        if (!working(run.status)) { window.location.reload(); return; }
      }
    } catch (e) { /* the next poll tries again */ }
    setTimeout(poll, 1000);
  }
  setTimeout(poll, 1000);
})();
