// FIRE conversation rating page: keyboard-only 1-5 scores, draft autosave, "Save scores and next", skip.
// The form is server-rendered and works without this script; this adds autosave through the API, the keys
// 1-5 on the focused turn, Ctrl+Enter, a lease heartbeat, a client request id so a retried final save
// never counts twice, and skipping with a reason through the API (then on to the next item).
// Preference items add a place per candidate (1 = best, equal places tie) that makes the ranking, a live
// summary of it, a warning when it contradicts the scores, and one short message for what a save lacks.
(function () {
  "use strict";
  const form = document.getElementById("rating-form");
  if (!form || form.dataset.canRate !== "1") return;
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const $ = (id) => document.getElementById(id);
  const isPreference = form.dataset.kind === "preference";
  const dims = isPreference ? ["helpfulness", "faithfulness", "ethics"] : ["score"];
  const turns = Array.from(form.querySelectorAll("li.turn[data-rateable]"));
  const ranks = Array.from(form.querySelectorAll("fieldset.rank"));
  const reasonsRequired = form.dataset.reasonsRequired === "1";
  const dimNames = {helpfulness: gettext("helpfulness"), faithfulness: gettext("faithfulness"), ethics: gettext("ethics")};
  const errorBox = $("form-error");
  const status = $("draft-status");
  let draftTimer = null;
  let saving = false;
  let dirty = false;

  function post(url, body, keepalive) {
    return fetch(url, {
      method: "POST",
      headers: {"Content-Type": "application/json", "X-CSRFToken": csrf},
      credentials: "same-origin",
      keepalive: Boolean(keepalive),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  }

  function checked(index, dim) {
    const input = form.querySelector(`input[name="${dim}-${index}"]:checked`);
    return input ? Number(input.value) : null;
  }

  function collect(final) {
    const ratings = turns.map((li) => {
      const index = Number(li.dataset.index);
      const row = {turn: index};
      dims.forEach((dim) => { row[dim] = checked(index, dim); });
      const comment = $(`comment-${index}`).value;
      row[isPreference ? "reason" : "comment"] = comment;
      return row;
    });
    const body = {ratings: ratings, final: final, client_request_id: final ? $("client-request-id").value : ""};
    if (isPreference) body.ranking = rankingText();
    return body;
  }

  // --- preference: the ranking from each candidate's place ---------------------------------------------------

  function place(fieldset) {
    const input = fieldset.querySelector("input.rank-radio:checked");
    return input ? Number(input.value) : null;
  }

  // Places to "2>1=3": candidates in order of place, equal places joined by "="; "" until every one has a place.
  function rankingText() {
    if (!ranks.length) return "";
    const places = ranks.map((fs) => ({candidate: Number(fs.dataset.candidate), place: place(fs)}));
    if (places.some((p) => p.place === null)) return "";
    const levels = Array.from(new Set(places.map((p) => p.place))).sort((a, b) => a - b);
    return levels.map((level) => places.filter((p) => p.place === level).map((p) => p.candidate).join("=")).join(">");
  }

  function candidateScores(li) {
    const index = Number(li.dataset.index);
    const values = dims.map((dim) => checked(index, dim));
    return values.some((v) => v === null) ? null : values;
  }

  // Pairs where the ranking puts a candidate above another whose scores are at least as high on every dimension
  // and higher on one (the server's ranking_contradictions, for the live warning).
  function contradictions() {
    const found = [];
    turns.forEach((liA, a) => {
      turns.forEach((liB, b) => {
        const above = place(ranks[a]), below = place(ranks[b]);
        if (above === null || below === null || above >= below) return;
        const mine = candidateScores(liA), theirs = candidateScores(liB);
        if (!mine || !theirs) return;
        if (theirs.every((t, k) => t >= mine[k]) && theirs.some((t, k) => t > mine[k])) {
          found.push(interpolate(gettext("your ranking puts candidate %(above)s above candidate %(below)s, whose scores are at least as high on every dimension and higher on one"),
                                 {above: a + 1, below: b + 1}, true));
        }
      });
    });
    return found;
  }

  function showRanking() {
    if (!ranks.length) return;
    const text = rankingText();
    $("ranking").value = text;
    $("ranking-text").textContent = text ? text.replace(/>/g, " > ").replace(/=/g, " = ") : $("ranking-text").dataset.none;
    const warning = $("ranking-warning");
    const found = contradictions();
    warning.textContent = found.length ? interpolate(gettext("Check: %(what)s."), {what: found.join("; ")}, true) : "";
    warning.hidden = !found.length;
  }

  function showError(message) {
    errorBox.textContent = message || "";
    errorBox.hidden = !message;
  }

  async function errorText(response) {
    try {
      const data = await response.json();
      if (data.detail) return data.detail;
      return interpolate(gettext("Please check your input: %(errors)s"), {errors: JSON.stringify(data)}, true);
    } catch (e) {
      return interpolate(gettext("The server answered %(status)s."), {status: response.status}, true);
    }
  }

  function saveDraftSoon() {
    dirty = true;
    status.textContent = gettext("Unsaved changes…");
    clearTimeout(draftTimer);
    draftTimer = setTimeout(saveDraft, 600);
  }

  async function saveDraft(leaving) {
    if (saving || !dirty) return;
    dirty = false;
    try {
      const response = await post(form.dataset.saveUrl, collect(false), leaving === true);
      if (response.ok) {
        status.textContent = interpolate(gettext("Draft saved %(time)s"), {time: new Date().toLocaleTimeString()}, true);
      } else {
        status.textContent = "";
        showError(await errorText(response));
      }
    } catch (e) {
      dirty = true;
      status.textContent = gettext("Offline: your draft will be saved when the connection is back.");
      draftTimer = setTimeout(saveDraft, 3000);
    }
  }

  function mark(element, isMissing) {
    element.classList.toggle("missing", isMissing);
    element.setAttribute("aria-invalid", isMissing ? "true" : "false");
  }

  function missingControls() {
    const missing = [];
    form.querySelectorAll("fieldset.rating").forEach((fs) => {
      const hasValue = checked(fs.dataset.turn, fs.dataset.dim) !== null;
      mark(fs, !hasValue);
      if (!hasValue) missing.push(fs);
    });
    return missing;
  }

  // Preference: what each candidate lacks (scores, reason) and the ranking, in one short sentence; the controls
  // to fill are marked and the first gets the focus.
  function preferenceMissing() {
    const parts = [];
    const targets = [];
    turns.forEach((li, k) => {
      const lacking = [];
      li.querySelectorAll("fieldset.rating").forEach((fs) => {
        const hasValue = checked(fs.dataset.turn, fs.dataset.dim) !== null;
        mark(fs, !hasValue);
        if (!hasValue) { lacking.push(dimNames[fs.dataset.dim]); targets.push(fs); }
      });
      const reason = $(`comment-${li.dataset.index}`);
      const noReason = reasonsRequired && !reason.value.trim();
      mark(reason, noReason);
      if (noReason) { lacking.push(gettext("reason")); targets.push(reason); }
      if (lacking.length) parts.push(interpolate(gettext("candidate %(number)s (%(what)s)"), {number: k + 1, what: lacking.join(", ")}, true));
    });
    const unplaced = ranks.filter((fs) => place(fs) === null);
    ranks.forEach((fs) => mark(fs, place(fs) === null));
    if (unplaced.length) { parts.push(gettext("the ranking")); targets.push(unplaced[0]); }
    if (!parts.length) return null;
    const listed = parts.length === 1 ? parts[0]
      : interpolate(gettext("%(items)s and %(last)s"), {items: parts.slice(0, -1).join(", "), last: parts[parts.length - 1]}, true);
    return {message: interpolate(gettext("Complete before saving: %(missing)s."), {missing: listed}, true), first: targets[0]};
  }

  function focusTarget(target) {
    if (target.matches("fieldset")) focusGroup(target); else target.focus();
  }

  function describe(fs) {
    const li = fs.closest("li.turn");
    const head = li.querySelector(".turn-head").textContent.replace(/\s+/g, " ").trim();
    return isPreference ? `${head} (${fs.dataset.dim})` : head;
  }

  async function saveFinal() {
    if (saving) return;
    const lacking = isPreference ? preferenceMissing() : null;
    if (lacking) {
      showError(lacking.message);
      focusTarget(lacking.first);
      return;
    }
    const missing = isPreference ? [] : missingControls();
    if (missing.length) {
      showError(interpolate(gettext("Score every rated turn before saving. Missing: %(missing)s."), {missing: missing.map(describe).join("; ")}, true));
      focusGroup(missing[0]);
      return;
    }
    saving = true;
    clearTimeout(draftTimer);
    showError("");
    $("save-next").disabled = true;
    status.textContent = gettext("Saving…");
    try {
      const response = await post(form.dataset.saveUrl, collect(true));
      if (response.ok) {
        status.textContent = gettext("Saved. Opening the next item…");
        $("next-form").submit();
        return;
      }
      showError(await errorText(response));
      status.textContent = "";
    } catch (e) {
      showError(gettext("The connection failed; your scores are still here. Press Ctrl+Enter to try again."));
      status.textContent = "";
    }
    saving = false;
    $("save-next").disabled = false;
  }

  function focusGroup(fieldset) {
    const target = fieldset.querySelector("input:checked") || fieldset.querySelector("input[type=radio]");
    if (target) target.focus();
  }

  // Tab goes from rating to rating (turn to turn); a turn's comment box is reached with M from its rating, and
  // Esc there goes back to the rating. Preference reasons are required, so they stay on the Tab path.
  if (form.dataset.kind === "fire") {
    form.querySelectorAll("textarea.comment").forEach((box) => { box.tabIndex = -1; });
  }
  form.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const turn = event.target.closest && event.target.closest("li.turn");
    if (!turn) return;
    if (event.key.toLowerCase() === "m" && event.target.matches("input[type=radio]")) {
      event.preventDefault();
      turn.querySelector("textarea.comment").focus();
    } else if (event.key === "Escape" && event.target.matches("textarea.comment")) {
      event.preventDefault();
      focusGroup(turn.querySelector("fieldset.rating"));
    }
  });

  // Keys 1-5 score the turn whose rating control has the focus (1-9: a candidate's place in the ranking); typing
  // in a comment is left alone.
  form.addEventListener("keydown", (event) => {
    const fieldset = event.target.closest && event.target.closest("fieldset.rating, fieldset.rank");
    if (!fieldset || event.ctrlKey || event.metaKey || event.altKey) return;
    if (!/^[1-9]$/.test(event.key)) return;
    const input = fieldset.querySelector(`input[type=radio][value="${event.key}"]`);
    if (!input) return;
    event.preventDefault();
    input.checked = true;
    input.focus();
    input.dispatchEvent(new Event("change", {bubbles: true}));
  });

  // `?` lists every shortcut (typed as text in a comment, reason or ranking box); Esc closes the list and the
  // focus goes back where it was.
  const shortcuts = $("shortcuts");
  $("shortcuts-open").addEventListener("click", () => shortcuts.showModal());

  document.addEventListener("keydown", (event) => {
    if (document.querySelector("dialog[open]")) return; // the list is open: its own keys only
    if (event.key === "?" && !event.ctrlKey && !event.metaKey && !event.altKey
        && !(event.target.matches && event.target.matches("textarea, input[type=text]"))) {
      event.preventDefault();
      shortcuts.showModal();
      return;
    }
    if (event.target.closest && event.target.closest("#skip-form")) return; // Enter there skips
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      saveFinal();
    }
  });

  form.addEventListener("change", (event) => {
    if (event.target.matches("input[type=radio]")) mark(event.target.closest("fieldset"), false);
    showRanking();
    saveDraftSoon();
  });
  form.addEventListener("input", (event) => {
    if (event.target.matches("textarea.comment") && event.target.value.trim()) mark(event.target, false);
    if (event.target.matches("textarea, input[type=text]")) saveDraftSoon();
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    saveFinal();
  });
  // Leaving with unsaved changes: send the draft anyway (keepalive outlives the page).
  window.addEventListener("pagehide", () => {
    if (dirty && !saving) { clearTimeout(draftTimer); saveDraft(true); }
  });

  // Skip with a reason: the API, then the next item, as after a final save. Enter in the reason skips (with or
  // without Ctrl), Esc closes the panel; opening the panel puts the focus in the reason.
  const skipPanel = $("skip-panel");
  const skipForm = $("skip-form");
  const skipReason = $("skip-reason");
  const skipError = $("skip-error");

  function showSkipError(message) {
    skipError.textContent = message || "";
    skipError.hidden = !message;
    skipReason.setAttribute("aria-invalid", message ? "true" : "false");
    if (message) skipReason.focus();
  }

  async function skip() {
    if (saving) return;
    if (!skipReason.value.trim()) {
      showSkipError(gettext("Say why you skip this conversation (for example 'the image does not load')."));
      return;
    }
    saving = true;
    clearTimeout(draftTimer);
    showSkipError("");
    $("skip-button").disabled = true;
    status.textContent = gettext("Skipping…");
    try {
      const response = await post(skipForm.dataset.skipUrl, {reason: skipReason.value.trim()});
      if (response.ok) {
        dirty = false; // nothing more to save here: the conversation is no longer ours
        status.textContent = gettext("Skipped. Opening the next item…");
        $("next-form").submit();
        return;
      }
      showSkipError(await errorText(response));
    } catch (e) {
      showSkipError(gettext("The connection failed; nothing was skipped. Press Enter to try again."));
    }
    status.textContent = "";
    saving = false;
    $("skip-button").disabled = false;
  }

  if (skipForm) {
    skipForm.addEventListener("submit", (event) => { event.preventDefault(); skip(); });
    skipForm.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && event.target === skipReason) {
        event.preventDefault();
        skip();
      } else if (event.key === "Escape") {
        skipPanel.open = false;
        $("skip-summary").focus();
      }
    });
    skipReason.addEventListener("input", () => { if (!skipError.hidden) showSkipError(""); });
    skipPanel.addEventListener("toggle", () => { if (skipPanel.open) skipReason.focus(); });
  }

  // Keep the reservation while the page is open (the lease is a few minutes).
  setInterval(() => { post(form.dataset.heartbeatUrl).catch(() => {}); }, 60000);

  showRanking();

  // Start on the first turn that still needs a score.
  const first = Array.from(form.querySelectorAll("fieldset.rating")).find((fs) => checked(fs.dataset.turn, fs.dataset.dim) === null)
    || form.querySelector("fieldset.rating");
  if (first) focusGroup(first);
})();
