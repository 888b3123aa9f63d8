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
  let shownStatus = null; // the status the panels were last drawn for: focus moves only when it changes
  let generatingSince = null;
  let typedAhead = ""; // typed while the model answers: goes into the feedback box when it appears
  const SLOW_AFTER_S = 45;
  // The page's translations come from Django's JavaScript catalog (loaded before this file).
  const fmt = (template, values) => interpolate(template, values, true);

  function api(path, body) {
    return fetch(`/api/sessions/${sessionId}/${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: {"Content-Type": "application/json", "X-CSRFToken": csrf},
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  }

  function text(el, value) { el.textContent = value == null ? "" : String(value); }
  // A failed round's message in the annotator's language, by its kind (annotate/sessions/failures.py). The
  // snapshot never carries the failure's detail (the lab's servers, exceptions): that is for researchers.
  function failureMessage(round) {
    return {
      timed_out: gettext("The model took too long to answer."),
      worker_stopped: gettext("The model worker stopped before the answer was complete. Your text is saved; press Retry."),
      queue_unreachable: gettext("The model queue could not be reached. Your text is saved; press Retry in a moment."),
      unavailable: gettext("The model is unavailable right now (it failed several times in a row); we'll retry shortly. Press Retry in a minute."),
      broke_off: gettext("The model's answer broke off before it was complete; press Retry."),
      empty: gettext("The model gave an empty answer; press Retry."),
      no_answer: gettext("The model did not answer; press Retry in a moment."),
    }[round.error_kind] || gettext("The model call failed; press Retry.");
  }

  function renderTask() {
    const task = state.task;
    text($("task-category"), task.category);
    text($("task-question"), task.question);
    const options = $("task-options");
    options.replaceChildren(...(task.options || []).map((o) => { const li = document.createElement("li"); li.textContent = o; return li; }));
    const images = $("task-images");
    if (!images.childElementCount) {
      task.images.forEach((src, i) => {
        // Each image is a button: Enter or a click zooms it. Its alt text says what it is from the task.
        const button = document.createElement("button");
        button.type = "button"; button.className = "image-button";
        const img = document.createElement("img");
        img.src = src;
        img.alt = fmt(gettext("Figure %(number)s: %(question)s"), {number: i + 1, question: task.question.slice(0, 120)});
        button.setAttribute("aria-label", fmt(gettext("Zoom figure %(number)s"), {number: i + 1}));
        button.appendChild(img);
        button.addEventListener("click", () => openZoom(img));
        images.appendChild(button);
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
    if (r.generation_status === "failed") return ["failed", gettext("Model call failed")];
    if (r.generation_status !== "done") return ["pending", ""]; // the one status line below says what happens
    if (r.verdict === true) return ["correct", gettext("Correct")];
    if (r.verdict === false) return ["wrong", gettext("Wrong")];
    return ["pending", gettext("Needs your verdict")];
  }

  function roundElement(r) {
    let li = document.querySelector(`li[data-round="${r.index}"]`);
    if (!li) {
      li = document.createElement("li");
      li.dataset.round = r.index;
      li.className = "round";
      li.innerHTML = '<h3></h3><div class="feedback" hidden><span class="who you"></span> <span class="feedback-text"></span></div>' +
        '<div class="answer"><span class="who model"></span> <pre class="answer-text" aria-live="polite"></pre></div>' +
        '<p class="verdict"></p>';
      text(li.querySelector(".who.you"), gettext("You:"));
      // The answer is labelled with the model's name, or not at all (never an empty "Model:")
      const who = li.querySelector(".who.model"), name = state.model && state.model.label;
      who.hidden = !name;
      if (name) text(who, fmt(gettext("%(model)s:"), {model: name}));
      $("rounds").appendChild(li);
    }
    return li;
  }

  function renderRound(r) {
    const li = roundElement(r);
    text(li.querySelector("h3"), r.index === 0 ? gettext("Round 0 — first answer") : fmt(gettext("Round %(index)s"), {index: r.index}));
    const fb = li.querySelector(".feedback");
    fb.hidden = r.index === 0;
    text(li.querySelector(".feedback-text"), r.feedback_text + (r.leak_flagged ? "  " + gettext("(sent despite the answer warning)") : ""));
    const answer = li.querySelector(".answer-text");
    answer.textContent = r.answer_text;
    answer.dataset.seq = r.stream_seq;
    const [cls, label] = verdictLabel(r);
    const verdict = li.querySelector(".verdict");
    verdict.className = `verdict ${cls}`;
    text(verdict, label + (r.extracted_answer ? " " + fmt(gettext("(extracted answer: %(answer)s)"), {answer: r.extracted_answer}) : ""));
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
    $("skip-panel").hidden = !canAct || s === "completed" || s === "abandoned";
    $("skipped-note").hidden = s !== "abandoned";
    if (s === "abandoned") text($("skipped-note"), endedNote(state.ended_as));
    $("reveal-help").hidden = !(s === "awaiting_feedback" && state.next_round === state.max_rounds);
    text($("round-progress"), roundProgress());
    if (s === "failed" && last) text($("retry-message"), failureMessage(last));
    if (s === "awaiting_feedback") {
      const label = state.next_round === state.max_rounds
        ? fmt(gettext("Round %(round)s (last): the correct answer is shown above and will be given to the model with your feedback"), {round: state.next_round})
        : fmt(gettext("Round %(round)s of %(max)s: your feedback to the model"), {round: state.next_round, max: state.max_rounds});
      text($("feedback-label"), label);
      const input = $("feedback-input");
      if (!input.value && state.feedback_draft) input.value = state.feedback_draft;
      if (canAct && typedAhead) {
        input.value += (input.value && !/\s$/.test(input.value) ? " " : "") + typedAhead;
        input.setSelectionRange(input.value.length, input.value.length);
        typedAhead = "";
        scheduleDraftSave();
      }
    }
    if (s === "completed" || s === "abandoned") typedAhead = ""; // no feedback box will come
    showTypedAhead();
    if (s === "completed") {
      text($("outcome"), state.corrected_round === null ? gettext("Session finished: the model was never corrected.")
        : state.corrected_round === 0 ? gettext("Session finished: the model was right at once (round 0).")
        : fmt(gettext("Session finished: the model was corrected in round %(round)s."), {round: state.corrected_round}));
    }
    const generating = s === "generating";
    if (generating && generatingSince === null) generatingSince = Date.now();
    if (!generating) generatingSince = null;
    updateStatusLine();
    if (generating) ensurePolling(); else stopPolling();
    if (s !== shownStatus) { shownStatus = s; moveFocus(s); }
  }

  // Why an abandoned item ended: skipped, left too long, or the end of the participant's study freed it.
  function endedNote(how) {
    switch (how) {
      case "skipped": return gettext("Skipped: this item went back to the pool for another annotator.");
      case "returned": return gettext("Ended: you left the study, and this item went back to the pool.");
      case "timed_out": return gettext("Ended: the study's time limit passed, and this item went back to the pool.");
      case "attention": return gettext("Ended: your participation was ended after failed attention checks, and this item went back to the pool.");
      default: return gettext("Expired: this item was left unfinished for too long and went back to the pool.");
    }
  }

  function roundProgress() {
    const s = state.status, last = state.rounds[state.rounds.length - 1];
    if (s === "completed") return gettext("finished");
    if (s === "abandoned") return state.ended_as === "skipped" ? gettext("skipped") : gettext("ended");
    const index = s === "awaiting_feedback" ? state.next_round : last ? last.index : 0;
    return index === 0 ? gettext("first answer") : fmt(gettext("round %(index)s of %(max)s"), {index, max: state.max_rounds});
  }

  // One status line while the model answers, with the time it has taken; a word when it is slow.
  function updateStatusLine() {
    if (state.status !== "generating") { text($("status-line"), ""); return; }
    const seconds = Math.round((Date.now() - generatingSince) / 1000);
    text($("status-line"), seconds < SLOW_AFTER_S ? fmt(gettext("The model is answering… %(seconds)s s"), {seconds})
      : fmt(gettext("The model is taking longer than usual (%(seconds)s s). Keep this page open: if the call fails, a Retry button appears here."), {seconds}));
  }

  function showTypedAhead() {
    $("typed-ahead").hidden = !typedAhead;
    text($("typed-ahead-text"), typedAhead);
  }

  // While the model answers, printable keys are kept for the feedback box instead of being lost, and the letter
  // shortcuts (S, F, C, W, R, N) do nothing, so nothing typed early can skip, judge or send. Space and Enter still
  // press a focused button; `?` still lists the shortcuts; Backspace takes back the last key kept.
  function keepTypedAhead(e) {
    const onControl = e.target.closest && e.target.closest("button, a[href], summary, input, select, textarea");
    let typed = null;
    if ([...e.key].length === 1 && e.key !== "?") typed = e.key;
    else if (e.key === "Enter" && !onControl) typed = "\n";
    else if (e.key === "Backspace" && typedAhead) {
      typedAhead = [...typedAhead].slice(0, -1).join("");
      showTypedAhead();
      return true;
    }
    if (typed === null || (onControl && typed === " ")) return false;
    if (!typingStartedAt) typingStartedAt = performance.now();
    typedAhead += typed;
    showTypedAhead();
    return true;
  }

  // Focus goes where the next action is, once per change of state, never while the annotator types elsewhere.
  function moveFocus(s) {
    const active = document.activeElement;
    if (active && active !== document.body && active.matches("input, textarea, select") && active.id !== "feedback-input") return;
    if (!canAct) return;
    if (s === "awaiting_feedback") $("feedback-input").focus();
    else if (s === "awaiting_verdict") $("verdict-question").focus(); // neither verdict is the default
    else if (s === "failed") $("retry-button").focus();
    else if (s === "completed") $("next-button").focus();
  }

  // Counts while the item is under way; a finished one shows its final time (until it ended), counting no more.
  let finishedSeenAt = null;
  function timeOnItem() {
    const started = Date.parse(root.dataset.startedAt);
    if (Number.isNaN(started)) return;
    const finished = state.status === "completed" || state.status === "abandoned";
    if (finished && finishedSeenAt === null) finishedSeenAt = Date.now();
    if (!finished) finishedSeenAt = null;
    const ended = finished ? (Date.parse(state.finished_at || "") || finishedSeenAt) : Date.now();
    const seconds = Math.max(0, Math.round((ended - started) / 1000));
    const mm = Math.floor(seconds / 60), ss = String(seconds % 60).padStart(2, "0");
    text($("time-on-item"), fmt(gettext("%(time)s on this item"), {time: `${mm}:${ss}`}));
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
  }

  function requestSnapshot() {
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({type: "snapshot"}));
    else refresh();
  }

  async function refresh() {
    let response;
    try { response = await api(""); } catch (e) { return; } // no node answers: the next poll or the WebSocket will
    if (response.ok) { state = await response.json(); render(); }
  }

  // A fallback for when the WebSocket is down: poll while the model answers.
  function ensurePolling() {
    if (pollTimer || (socket && socket.readyState === WebSocket.OPEN)) return;
    pollTimer = setInterval(refresh, 1500);
  }
  function stopPolling() { if (pollTimer) { clearInterval(pollTimer); pollTimer = null; } }

  // A guard against a lost event: while the model answers, ask for a snapshot after a quiet spell. A spell whose
  // snapshot brings nothing new doubles the next one, up to 40 s: pages waiting on a busy queue ask less often, not
  // every 10 s (with 1,000 annotators on 2 cores, their snapshots were most of the WebSocket server's work).
  const SNAPSHOT_AFTER_QUIET_MS = 10000, SNAPSHOT_AFTER_QUIET_MAX_MS = 40000;
  let lastEventAt = Date.now(), quietMs = SNAPSHOT_AFTER_QUIET_MS, lastSnapshot = "";
  setInterval(() => {
    if (state.status === "generating" && Date.now() - lastEventAt > quietMs) {
      lastEventAt = Date.now();
      quietMs = Math.min(2 * quietMs, SNAPSHOT_AFTER_QUIET_MAX_MS);
      requestSnapshot();
    }
  }, 1000);

  // Reconnects to whichever web node answers: soon at first, then backing off with jitter (so a crowd of pages
  // whose node died does not arrive at once), never reloading. The snapshot sent on connect brings the page up to
  // date; the typed text stays in the box and a draft the old node never acknowledged is saved again.
  let reconnectAttempts = 0;
  function reconnectDelay() {
    const ceiling = Math.min(5000, 250 * 2 ** reconnectAttempts++);
    return ceiling / 2 + Math.random() * ceiling / 2;
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${scheme}://${location.host}/ws/sessions/${sessionId}/`);
    socket.onopen = () => {
      text($("connection"), gettext("Live")); stopPolling();
      reconnectAttempts = 0;
      if (draftUnsaved && canAct && state.status === "awaiting_feedback") scheduleDraftSave();
    };
    socket.onmessage = (message) => {
      const event = JSON.parse(message.data);
      lastEventAt = Date.now();
      if (event.type === "chunk" || (event.type === "snapshot" && message.data !== lastSnapshot)) {
        quietMs = SNAPSHOT_AFTER_QUIET_MS; // news: the guard starts over
      }
      if (event.type === "snapshot") { lastSnapshot = message.data; state = event.session; render(); }
      else if (event.type === "chunk") applyChunk(event);
      else if (event.type === "draft_saved" && event.id === draftId) { draftUnsaved = false; text($("draft-status"), gettext("Draft saved")); }
    };
    socket.onclose = (event) => {
      // 4429: this person has too many live pages open (annotate/server/ws_limits.py): try again later.
      const tooMany = event.code === 4429;
      text($("connection"), tooMany ? gettext("Too many pages open: this one updates more slowly. Close the ones you do not use.")
        : gettext("Reconnecting…"));
      if (state.status === "generating") ensurePolling();
      setTimeout(connect, tooMany ? 30000 : reconnectDelay());
    };
  }

  function requestId() {
    // One id per pending submission, kept across reloads, so a resend is recognised as the same action.
    const key = `feedback-request-${sessionId}-${state.next_round}`;
    let id = sessionStorage.getItem(key);
    if (!id) { id = (crypto.randomUUID ? crypto.randomUUID() : String(Date.now()) + Math.random()); sessionStorage.setItem(key, id); }
    return id;
  }

  // The warning names what the typed text states (never whether it is right); editing is the default.
  function showLeakWarning(body) {
    const list = $("leak-detected");
    list.replaceChildren(...(body.detected || []).map((what) => { const li = document.createElement("li"); li.textContent = what; return li; }));
    $("leak-warning").hidden = false; text($("leak-message"), body.detail); $("leak-edit").focus();
  }

  async function sendFeedback(confirmLeak) {
    if (sending) return;
    const input = $("feedback-input");
    const feedback = input.value.trim();
    const error = $("feedback-error");
    error.hidden = true;
    if (!feedback) { error.hidden = false; text(error, gettext("Type your feedback first.")); input.focus(); return; }
    sending = true;
    $("feedback-submit").disabled = true;
    const sent = input.value; // what is typed after this, while the request is out, is kept for the next round
    try {
      const response = await api("feedback/", {
        feedback, client_request_id: requestId(), confirm_leak: !!confirmLeak,
        typing_ms: typingStartedAt ? Math.round(performance.now() - typingStartedAt) : null,
      });
      const body = await response.json().catch(() => ({}));
      if (response.ok && body.code === "ground_truth_leak") {
        showLeakWarning(body); // a warning (200), nothing sent: edit, or send anyway
      } else if (response.ok) {
        sessionStorage.removeItem(`feedback-request-${sessionId}-${state.next_round}`);
        const later = input.value.startsWith(sent) ? input.value.slice(sent.length).trimStart() : "";
        input.value = ""; typingStartedAt = later ? performance.now() : null; $("leak-warning").hidden = true;
        typedAhead += later;
        state = body; render();
      } else {
        error.hidden = false; text(error, body.detail || fmt(gettext("Could not send (%(status)s)."), {status: response.status}));
      }
    } catch (e) {
      error.hidden = false; text(error, gettext("Network problem: your text is kept; press Send again."));
    } finally {
      sending = false; $("feedback-submit").disabled = false;
    }
  }

  // Drafts go over the open WebSocket (acknowledged by "draft_saved"); over HTTP when it is down.
  // Unsaved until acknowledged: a node that dies before it answers leaves the draft to be saved on reconnect.
  let draftId = 0;
  let draftUnsaved = false;
  function scheduleDraftSave() {
    clearTimeout(draftTimer);
    draftUnsaved = true;
    text($("draft-status"), "");
    draftTimer = setTimeout(async () => {
      const draft = $("feedback-input").value;
      if (socket && socket.readyState === WebSocket.OPEN) {
        socket.send(JSON.stringify({type: "draft", draft, id: ++draftId}));
        return;
      }
      try {
        const response = await api("draft/", {draft});
        if (response.ok && $("feedback-input").value === draft) { draftUnsaved = false; text($("draft-status"), gettext("Draft saved")); }
      } catch (e) { /* no node answers yet: saved when the WebSocket is back */ }
    }, 600);
  }

  async function setVerdict(correct) {
    const r = await api("verdict/", {correct});
    if (r.ok) { state = await r.json(); render(); }
  }

  async function retry() {
    const r = await api("retry/", {});
    if (r.ok) { state = await r.json(); render(); }
  }

  function skipReason() {
    const picked = document.querySelector('input[name="skip-reason"]:checked');
    if (!picked) return "";
    return picked.value || $("skip-reason").value.trim();
  }

  async function skip() {
    const reason = skipReason();
    if (!reason) {
      $("skip-error").hidden = false;
      text($("skip-error"), gettext("Pick a reason, or choose Other and say why."));
      (document.querySelector('input[name="skip-reason"]:checked') ? $("skip-reason") : $("skip-first-reason")).focus();
      return;
    }
    const r = await api("skip/", {reason});
    if (r.ok) { window.location.href = "/?annotate=1"; return; }
    const body = await r.json().catch(() => ({}));
    $("skip-error").hidden = false; text($("skip-error"), body.detail || gettext("Could not skip."));
  }

  function openSkip() {
    $("skip-panel").open = true;
    $("skip-first-reason").focus();
  }

  // Zoom and pan for task images, by mouse (wheel, drag) or keyboard (+, -, arrows).
  const zoom = {scale: 1, x: 0, y: 0, drag: null};
  function applyZoom() {
    $("zoom-image").style.transform = `translate(${zoom.x}px, ${zoom.y}px) scale(${zoom.scale})`;
  }
  function openZoom(img) {
    Object.assign(zoom, {scale: 1, x: 0, y: 0, drag: null});
    const big = $("zoom-image");
    big.src = img.src; big.alt = img.alt;
    applyZoom();
    $("image-zoom").showModal();
  }
  function zoomBy(factor) { zoom.scale = Math.min(8, Math.max(1, zoom.scale * factor)); applyZoom(); }
  $("image-zoom").addEventListener("keydown", (e) => {
    const pan = {ArrowLeft: [40, 0], ArrowRight: [-40, 0], ArrowUp: [0, 40], ArrowDown: [0, -40]}[e.key];
    if (e.key === "+" || e.key === "=") zoomBy(1.25);
    else if (e.key === "-") zoomBy(0.8);
    else if (pan) { zoom.x += pan[0]; zoom.y += pan[1]; applyZoom(); }
    else return;
    e.preventDefault();
  });
  $("zoom-viewport").addEventListener("wheel", (e) => { e.preventDefault(); zoomBy(e.deltaY < 0 ? 1.15 : 0.87); }, {passive: false});
  $("zoom-viewport").addEventListener("pointerdown", (e) => { zoom.drag = [e.clientX - zoom.x, e.clientY - zoom.y]; });
  $("zoom-viewport").addEventListener("pointermove", (e) => {
    if (!zoom.drag) return;
    zoom.x = e.clientX - zoom.drag[0]; zoom.y = e.clientY - zoom.drag[1]; applyZoom();
  });
  window.addEventListener("pointerup", () => { zoom.drag = null; });

  $("shortcuts-open").addEventListener("click", () => $("shortcuts").showModal());

  // Single-key shortcuts work whenever the focus is not in a text field (Esc leaves the feedback box).
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || e.isComposing || document.querySelector("dialog[open]")) return;
    const target = e.target;
    if (target.matches && target.matches("textarea, input[type=text]")) {
      if (e.key === "Escape") { e.preventDefault(); target.blur(); $("transcript-heading").focus(); }
      return;
    }
    if (canAct && state.status === "generating" && keepTypedAhead(e)) { e.preventDefault(); return; }
    const visible = (id) => !$(id).hidden;
    const key = e.key.toLowerCase();
    let done = true;
    if (e.key === "?") $("shortcuts").showModal();
    else if (!canAct) done = false;
    else if (key === "f" && visible("feedback-form")) $("feedback-input").focus();
    else if (key === "c" && visible("verdict-panel")) setVerdict(true);
    else if (key === "w" && visible("verdict-panel")) setVerdict(false);
    else if (key === "r" && visible("retry-panel")) retry();
    else if (key === "s" && visible("skip-panel")) openSkip();
    else if (key === "n" && visible("done-panel")) $("next-button").click();
    else if (e.key === "Enter" && target.name === "skip-reason") { target.checked = true; skip(); }
    else done = false;
    if (done) e.preventDefault();
  });

  if (canAct) {
    $("feedback-form").addEventListener("submit", (e) => { e.preventDefault(); sendFeedback(false); });
    $("feedback-input").addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); sendFeedback(false); }
    });
    $("feedback-input").addEventListener("input", () => { if (!typingStartedAt) typingStartedAt = performance.now(); scheduleDraftSave(); });
    $("leak-confirm").addEventListener("click", () => sendFeedback(true));
    $("leak-edit").addEventListener("click", () => { $("leak-warning").hidden = true; $("feedback-input").focus(); });
    $("retry-button").addEventListener("click", retry);
    $("verdict-correct").addEventListener("click", () => setVerdict(true));
    $("verdict-wrong").addEventListener("click", () => setVerdict(false));
    setInterval(() => { if (state.status !== "completed") api("heartbeat/", {}); }, 60000);
    $("skip-button").addEventListener("click", skip);
    $("skip-reason").addEventListener("input", () => { $("skip-other").checked = true; });
    $("skip-reason").addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); skip(); } });
  }

  setInterval(() => { timeOnItem(); updateStatusLine(); }, 1000);
  timeOnItem();
  render();
  connect();
})();
