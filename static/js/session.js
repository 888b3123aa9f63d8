// Annotator session page: renders the session snapshot, streams the model's answer over a WebSocket,
// and sends feedback with a client request id so retries and double clicks never make two rounds.
(function () {
  "use strict";
  const root = document.getElementById("session-root");
  const sessionId = root.dataset.sessionId;
  const canAct = root.dataset.canAct === "1";
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const $ = (id) => document.getElementById(id);
  let state = JSON.parse($("session-snapshot").textContent);
  let socket = null;
  let pollTimer = null;
  let typingStartedAt = null;
  let draftTimer = null;
  let sending = false;

  function api(path, body) {
    return fetch(`/api/sessions/${sessionId}/${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: {"Content-Type": "application/json", "X-CSRFToken": csrf},
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  }

  function text(el, value) { el.textContent = value == null ? "" : String(value); }

  function renderTask() {
    const task = state.task;
    text($("task-id"), task.id);
    text($("task-category"), task.category);
    text($("task-question"), task.question);
    const options = $("task-options");
    options.replaceChildren(...(task.options || []).map((o) => { const li = document.createElement("li"); li.textContent = o; return li; }));
    const images = $("task-images");
    if (!images.childElementCount) {
      task.images.forEach((src, i) => {
        const img = document.createElement("img");
        img.src = src; img.alt = `Task image ${i + 1}`; images.appendChild(img);
      });
    }
    text($("model-label"), state.model.label);
    $("model-simulated").hidden = !state.model.simulated;
    if (state.judging_reference !== undefined) {
      $("judging-reference").hidden = false;
      text($("judging-reference-text"), state.judging_reference);
    }
    if (state.ground_truth_revealed) {
      $("ground-truth").hidden = false;
      text($("ground-truth-text"), state.ground_truth);
    }
  }

  function verdictLabel(r) {
    if (r.generation_status === "failed") return ["failed", "Model call failed"];
    if (r.generation_status !== "done") return ["pending", r.generation_status === "queued" ? "Waiting for the model…" : "Model is answering…"];
    if (r.verdict === true) return ["correct", "Correct"];
    if (r.verdict === false) return ["wrong", "Wrong"];
    return ["pending", "Needs your verdict"];
  }

  function roundElement(r) {
    let li = document.querySelector(`li[data-round="${r.index}"]`);
    if (!li) {
      li = document.createElement("li");
      li.dataset.round = r.index;
      li.className = "round";
      li.innerHTML = '<h3></h3><div class="feedback" hidden><span class="who">You:</span> <span class="feedback-text"></span></div>' +
        '<div class="answer"><span class="who">Model:</span> <pre class="answer-text" aria-live="polite"></pre></div>' +
        '<p class="verdict"></p>';
      $("rounds").appendChild(li);
    }
    return li;
  }

  function renderRound(r) {
    const li = roundElement(r);
    text(li.querySelector("h3"), r.index === 0 ? "Round 0 — first answer" : `Round ${r.index}`);
    const fb = li.querySelector(".feedback");
    fb.hidden = r.index === 0;
    text(li.querySelector(".feedback-text"), r.feedback_text + (r.leak_flagged ? "  (sent despite the answer warning)" : ""));
    const answer = li.querySelector(".answer-text");
    answer.textContent = r.answer_text;
    answer.dataset.seq = r.stream_seq;
    const [cls, label] = verdictLabel(r);
    const verdict = li.querySelector(".verdict");
    verdict.className = `verdict ${cls}`;
    text(verdict, label + (r.extracted_answer ? ` (extracted answer: ${r.extracted_answer})` : ""));
  }

  function render() {
    renderTask();
    state.rounds.forEach(renderRound);
    const s = state.status;
    const last = state.rounds[state.rounds.length - 1];
    $("feedback-form").hidden = !(canAct && s === "awaiting_feedback");
    $("verdict-panel").hidden = !(canAct && s === "awaiting_verdict");
    $("retry-panel").hidden = !(canAct && s === "failed");
    $("done-panel").hidden = s !== "completed";
    $("skip-panel").hidden = !canAct || s === "completed";
    if (s === "failed" && last) text($("retry-message"), last.error || "The model call failed.");
    if (s === "awaiting_feedback") {
      const label = state.next_round === state.max_rounds
        ? `Round ${state.next_round} (last): the correct answer is shown above and will be given to the model with your feedback`
        : `Round ${state.next_round} of ${state.max_rounds}: your feedback to the model`;
      text($("feedback-label"), label);
      const input = $("feedback-input");
      if (!input.value && state.feedback_draft) input.value = state.feedback_draft;
    }
    if (s === "completed") {
      text($("outcome"), state.corrected_round === null ? "Session finished: the model was never corrected."
        : state.corrected_round === 0 ? "Session finished: the model was right at once (round 0)."
        : `Session finished: the model was corrected in round ${state.corrected_round}.`);
    }
    const generating = s === "generating";
    text($("status-line"), generating ? "The model is answering…" : "");
    if (generating) ensurePolling(); else stopPolling();
  }

  function applyChunk(event) {
    const li = document.querySelector(`li[data-round="${event.round}"]`);
    if (!li) { requestSnapshot(); return; }
    const answer = li.querySelector(".answer-text");
    const seq = Number(answer.dataset.seq || 0);
    if (event.seq <= seq) return; // already in the snapshot
    if (event.seq > seq + 1) { requestSnapshot(); } // a gap: the snapshot will repair it
    answer.textContent += event.text;
    answer.dataset.seq = event.seq;
    const verdict = li.querySelector(".verdict");
    verdict.className = "verdict pending"; text(verdict, "Model is answering…");
  }

  function requestSnapshot() {
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({type: "snapshot"}));
    else refresh();
  }

  async function refresh() {
    const response = await api("");
    if (response.ok) { state = await response.json(); render(); }
  }

  // A fallback for when the WebSocket is down: poll while the model answers.
  function ensurePolling() {
    if (pollTimer || (socket && socket.readyState === WebSocket.OPEN)) return;
    pollTimer = setInterval(refresh, 1500);
  }
  function stopPolling() { if (pollTimer) { clearInterval(pollTimer); pollTimer = null; } }

  // A guard against a lost event: while the model answers, ask for a snapshot after a quiet spell.
  const SNAPSHOT_AFTER_QUIET_MS = 10000;
  let lastEventAt = Date.now();
  setInterval(() => {
    if (state.status === "generating" && Date.now() - lastEventAt > SNAPSHOT_AFTER_QUIET_MS) {
      lastEventAt = Date.now();
      requestSnapshot();
    }
  }, 1000);

  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${scheme}://${location.host}/ws/sessions/${sessionId}/`);
    socket.onopen = () => { text($("connection"), "Live"); stopPolling(); };
    socket.onmessage = (message) => {
      const event = JSON.parse(message.data);
      lastEventAt = Date.now();
      if (event.type === "snapshot") { state = event.session; render(); }
      else if (event.type === "chunk") applyChunk(event);
      else if (event.type === "draft_saved" && event.id === draftId) text($("draft-status"), "Draft saved");
    };
    socket.onclose = () => {
      text($("connection"), "Reconnecting…");
      if (state.status === "generating") ensurePolling();
      setTimeout(connect, 2000);
    };
  }

  function requestId() {
    // One id per pending submission, kept across reloads, so a resend is recognised as the same action.
    const key = `feedback-request-${sessionId}-${state.next_round}`;
    let id = sessionStorage.getItem(key);
    if (!id) { id = (crypto.randomUUID ? crypto.randomUUID() : String(Date.now()) + Math.random()); sessionStorage.setItem(key, id); }
    return id;
  }

  async function sendFeedback(confirmLeak) {
    if (sending) return;
    const input = $("feedback-input");
    const feedback = input.value.trim();
    const error = $("feedback-error");
    error.hidden = true;
    if (!feedback) { error.hidden = false; text(error, "Type your feedback first."); input.focus(); return; }
    sending = true;
    $("feedback-submit").disabled = true;
    try {
      const response = await api("feedback/", {
        feedback, client_request_id: requestId(), confirm_leak: !!confirmLeak,
        typing_ms: typingStartedAt ? Math.round(performance.now() - typingStartedAt) : null,
      });
      const body = await response.json().catch(() => ({}));
      if (response.ok) {
        sessionStorage.removeItem(`feedback-request-${sessionId}-${state.next_round}`);
        input.value = ""; typingStartedAt = null; $("leak-warning").hidden = true;
        state = body; render();
      } else if (body.code === "ground_truth_leak") {
        $("leak-warning").hidden = false; text($("leak-message"), body.detail); $("leak-confirm").focus();
      } else {
        error.hidden = false; text(error, body.detail || `Could not send (${response.status}).`);
      }
    } catch (e) {
      error.hidden = false; text(error, "Network problem: your text is kept; press Send again.");
    } finally {
      sending = false; $("feedback-submit").disabled = false;
    }
  }

  // Drafts go over the open WebSocket (acknowledged by "draft_saved"); over HTTP when it is down.
  let draftId = 0;
  function scheduleDraftSave() {
    clearTimeout(draftTimer);
    text($("draft-status"), "");
    draftTimer = setTimeout(async () => {
      const draft = $("feedback-input").value;
      if (socket && socket.readyState === WebSocket.OPEN) {
        socket.send(JSON.stringify({type: "draft", draft, id: ++draftId}));
        return;
      }
      const response = await api("draft/", {draft});
      if (response.ok) text($("draft-status"), "Draft saved");
    }, 600);
  }

  if (canAct) {
    $("feedback-form").addEventListener("submit", (e) => { e.preventDefault(); sendFeedback(false); });
    $("feedback-input").addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); sendFeedback(false); }
    });
    $("feedback-input").addEventListener("input", () => { if (!typingStartedAt) typingStartedAt = performance.now(); scheduleDraftSave(); });
    $("leak-confirm").addEventListener("click", () => sendFeedback(true));
    $("retry-button").addEventListener("click", async () => { const r = await api("retry/", {}); if (r.ok) { state = await r.json(); render(); } });
    $("verdict-correct").addEventListener("click", async () => { const r = await api("verdict/", {correct: true}); if (r.ok) { state = await r.json(); render(); } });
    $("verdict-wrong").addEventListener("click", async () => { const r = await api("verdict/", {correct: false}); if (r.ok) { state = await r.json(); render(); } });
    setInterval(() => { if (state.status !== "completed") api("heartbeat/", {}); }, 60000);
    $("skip-button").addEventListener("click", async () => {
      const r = await api("skip/", {reason: $("skip-reason").value});
      if (r.ok) { window.location.href = "/?annotate=1"; return; }
      const body = await r.json().catch(() => ({}));
      $("skip-error").hidden = false; text($("skip-error"), body.detail || "Could not skip.");
    });
  }

  render();
  connect();
})();
