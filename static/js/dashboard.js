// The live study dashboard: renders each snapshot the server pushes over the WebSocket (and the one embedded in the
// page at load). Text only through textContent; reconnects after a lost connection.
(function () {
  "use strict";
  var script = document.getElementById("dashboard-script");
  var _ = window.gettext || function (s) { return s; };

  function text(id, value) {
    var el = document.getElementById(id);
    if (el) { el.textContent = value; }
  }

  function duration(seconds) {
    if (seconds === null || seconds === undefined) { return document.getElementById("eta").dataset.none; }
    var h = Math.floor(seconds / 3600), m = Math.round((seconds % 3600) / 60);
    if (h >= 48) { return Math.round(h / 24) + " d"; }
    return h ? h + " h " + m + " min" : m + " min";
  }

  function rows(tableId, items, cells) {
    var table = document.getElementById(tableId);
    var body = table && table.querySelector("tbody");
    if (!body) { return; }
    if (!items.length) {  // an empty table says so (its sentence is in the page, translated)
      var row = document.createElement("tr"), cell = document.createElement("td");
      row.className = "empty";
      cell.colSpan = table.querySelectorAll("thead th").length;
      cell.textContent = table.dataset.empty;
      row.appendChild(cell);
      body.replaceChildren(row);
      return;
    }
    body.replaceChildren.apply(body, items.map(function (item) {
      var tr = document.createElement("tr");
      cells(item).forEach(function (value, i) {
        var td = document.createElement("td");
        if (i > 0 && typeof value !== "string") { td.className = "num"; }  // text cells (an error) stay left
        td.textContent = value === null || value === undefined ? "?" : String(value);
        tr.appendChild(td);
      });
      return tr;
    }));
  }

  function points(cumulative, needed) {
    var svg = document.getElementById("progress-plot");
    var width = Number(svg.dataset.width), height = Number(svg.dataset.height), pad = 6;
    var top = Math.max(needed, Math.max.apply(null, cumulative.concat([0])), 1);
    var step = (width - 2 * pad) / Math.max(cumulative.length - 1, 1);
    return cumulative.map(function (value, i) {
      return (pad + i * step).toFixed(1) + "," + (height - pad - (height - 2 * pad) * value / top).toFixed(1);
    }).join(" ");
  }

  function render(d) {
    ["done", "in_progress", "left", "needed"].forEach(function (key) { text("total-" + key, d.totals[key]); });
    text("pace", Number(d.pace_per_hour).toFixed(1)); // the unit ("completed") stands beside it
    var short = Boolean(d.capacity && d.capacity.short);
    text("eta", short ? document.getElementById("eta").dataset.cannotFinish : duration(d.eta_seconds));
    document.getElementById("capacity").hidden = !short;
    if (short) {
      text("capacity-people", d.capacity.people_per_unit);
      text("capacity-annotators", d.capacity.annotators);
      text("capacity-more", d.capacity.more_needed);
      text("capacity-unservable", d.capacity.unservable);
    }
    text("active-annotators", d.active_annotators);
    text("skips-total", d.skips_total);
    text("leak-warnings", d.leak_warnings);
    if (d.participants) {
      Object.keys(d.participants).forEach(function (key) { text("participants-" + key, d.participants[key]); });
      document.getElementById("participants-section").hidden = !d.participants.joined;
    }
    var at = document.getElementById("generated-at");
    at.setAttribute("datetime", d.generated_at);
    at.textContent = d.generated_at.slice(11, 19);
    var progress = function (r) { return [r.name, r.done, r.in_progress, r.left, r.needed]; };
    rows("by-model", d.by_model, progress);
    rows("by-category", d.by_category, progress);
    rows("queues", d.queues, function (q) { return [q.queue, q.depth]; });
    rows("model-errors", d.model_errors, function (e) {
      return [e.model, e.last_hour, e.total, e.failing_now, e.latest.length > 300 ? e.latest.slice(0, 299) + "…" : e.latest];
    });
    rows("unavailable-models", d.unavailable_models, function (u) {
      return [u.model, u.since.slice(11, 19), u.reason.length > 200 ? u.reason.slice(0, 199) + "…" : u.reason];
    });
    rows("skips", d.skips, function (s) { return [s.reason, s.count]; });
    document.getElementById("progress-line").setAttribute("points", points(d.cumulative, d.totals.needed));
  }

  // Reconnects to whichever web node answers: soon at first, then backing off with jitter, never reloading; the
  // snapshot sent on connect brings the numbers up to date.
  var reconnectAttempts = 0;
  function reconnectDelay() {
    var ceiling = Math.min(5000, 250 * Math.pow(2, reconnectAttempts++));
    return ceiling / 2 + Math.random() * ceiling / 2;
  }

  function connect() {
    var state = document.getElementById("live-state");
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    var socket = new WebSocket(scheme + location.host + script.dataset.socket);
    socket.onopen = function () { reconnectAttempts = 0; state.textContent = state.dataset.connected; };
    socket.onmessage = function (event) {
      var message = JSON.parse(event.data);
      if (message.type === "dashboard") { render(message.dashboard); }
    };
    socket.onclose = function (event) {
      if (event.code === 4403) { state.textContent = _("You may not watch this batch."); return; }
      if (event.code === 4429) {  // too many live pages open for this person (annotate/server/ws_limits.py)
        state.textContent = _("Too many pages open: this one updates more slowly. Close the ones you do not use.");
        setTimeout(connect, 30000);
        return;
      }
      state.textContent = state.dataset.lost;
      setTimeout(connect, reconnectDelay());
    };
  }

  render(JSON.parse(document.getElementById("dashboard-data").textContent));
  connect();
})();
