// Eagle-RAG built-in UI: the parts htmx does not cover — the API key, uploads with live progress,
// streamed answers with citations, hovercards and page previews.
//
// Safety rule: text from documents, names and answers is only ever put into the page through
// textContent / createTextNode, never innerHTML, so it cannot become markup or script.
// Streams are read with fetch(), not EventSource: EventSource can neither POST (/query/stream)
// nor send the Authorization header an API key needs.
"use strict";

(function () {
  const KEY = "eagle_api_key";
  const T = JSON.parse(document.getElementById("i18n").content.textContent || "{}");
  const gateOpen = document.body.dataset.gateOpen === "true";

  // --- small helpers ---------------------------------------------------------------------------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === "class") node.className = value;
      else if (name === "text") node.textContent = value;
      else if (name.startsWith("data-") || name.startsWith("aria-") || name === "role" ||
               name === "type" || name === "title" || name === "alt" || name === "hidden" ||
               name === "tabindex" || name === "max" || name === "value" || name === "lang" ||
               name === "dir") {
        node.setAttribute(name, value === true ? "" : String(value));
      } else node[name] = value;
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  function apiKey() { return sessionStorage.getItem(KEY) || ""; }

  function authHeaders(extra) {
    const headers = Object.assign({}, extra || {});
    const key = apiKey();
    if (key) headers.Authorization = "Bearer " + key;
    return headers;
  }

  async function api(path, options) {
    const opts = Object.assign({}, options || {});
    opts.headers = authHeaders(opts.headers);
    const response = await fetch(path, opts);
    if (response.status === 401) askForKey();
    return response;
  }

  // An error body ({code, message}) in words: the catalog's name for its code, where the
  // language has one (only Chinese: the server speaks English), then the server's own message.
  function errorText(body, fallback) {
    const said = body.message || body.code || fallback;
    const named = body.code && T["err_" + body.code];
    return named && named !== said ? named + "：" + said : said;
  }

  async function errorMessage(response) {
    try {
      return errorText(await response.json(), response.statusText);
    } catch (e) {
      return response.status + " " + response.statusText;
    }
  }

  function notice(text, kind) {
    const box = document.getElementById("notice");
    box.replaceChildren(el("p", { class: kind || "ok", text: text }));
  }

  function clearNotice() { document.getElementById("notice").replaceChildren(); }

  // Server-Sent Events over fetch: yields {event, data} with data parsed as JSON.
  async function* sse(path, options) {
    const response = await api(path, options);
    if (!response.ok) {
      yield { event: "error", data: { code: String(response.status), message: await errorMessage(response) } };
      return;
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let held = ""; // a chunk's last "\r": its "\n" may start the next chunk (one CRLF, not two breaks)
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      const text = held + decoder.decode(value, { stream: true });
      held = text.endsWith("\r") ? "\r" : "";
      buffer += text.slice(0, text.length - held.length).replace(/\r\n?/g, "\n");
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        let event = "message";
        const data = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) event = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
        if (!data.length) continue; // a comment or ping
        let parsed;
        try { parsed = JSON.parse(data.join("\n")); } catch (e) { parsed = data.join("\n"); }
        yield { event: event, data: parsed };
      }
    }
  }

  // --- API key --------------------------------------------------------------------------------

  // Asked for when a request was refused with a 401: a key already held was the one refused.
  // Once the reader closes the dialog (Escape), a later refusal on this page does not open it
  // again (each fragment answering after it did): the fragments say why, and their button
  // (an event: asked for) opens it.
  let keyPromptDismissed = false;
  function askForKey(event) {
    if (keyPromptDismissed && !(event instanceof Event)) return;
    const dialog = document.getElementById("key-dialog");
    document.getElementById("key-refused").hidden = !apiKey();
    if (dialog && !dialog.open) dialog.showModal();
  }

  function setupKey() {
    const form = document.getElementById("key-form");
    form.addEventListener("submit", () => {
      const value = document.getElementById("key-input").value.trim();
      if (value) {
        sessionStorage.setItem(KEY, value);
        location.reload();
      }
    });
    const dialog = document.getElementById("key-dialog");
    if (dialog) dialog.addEventListener("cancel", () => { keyPromptDismissed = true; });
    const forget = document.getElementById("forget-key");
    if (forget) forget.addEventListener("click", () => { sessionStorage.removeItem(KEY); location.reload(); });
    if (!gateOpen && !apiKey()) askForKey();
  }

  // --- htmx glue ------------------------------------------------------------------------------

  function setupHtmx() {
    document.body.addEventListener("htmx:configRequest", (event) => {
      const key = apiKey();
      if (key) event.detail.headers.Authorization = "Bearer " + key;
    });
    document.body.addEventListener("htmx:afterSwap", (event) => {
      event.detail.target.removeAttribute("aria-busy");
      delete event.detail.target.dataset.failed;  // a later refresh that worked
      wireFragment(event.detail.target);
    });
    document.body.addEventListener("htmx:responseError", async (event) => {
      const xhr = event.detail.xhr;
      if (xhr.status === 401) askForKey();
      let body = {};
      try { body = JSON.parse(xhr.responseText); } catch (e) { body = { message: xhr.statusText }; }
      const target = event.detail.target;
      // A form's own fields failing to load say so in the notice and keep the form, unless no key
      // was accepted: then nothing in it can work, and its fields say why instead of "Loading…".
      if (event.detail.requestConfig.verb === "get" && target && (!target.closest("form") || xhr.status === 401)) {
        fragmentFailed(target, xhr.status, errorText(body, ""));
        return;
      }
      notice((T.error || "Error") + ": " + errorText(body, String(xhr.status)), "err");
      const field = body.details && body.details.field;
      const form = event.detail.elt.closest("form");
      if (field && form) markField(form, field, body.message);
    });
    document.body.addEventListener("htmx:beforeRequest", (event) => {
      const form = event.detail.elt.closest && event.detail.elt.closest("form");
      if (form) clearFieldErrors(form);
      // Only the form's own post: the engine picker inside it loads its fields as a GET.
      // An earlier answer in the notice ("already exists") would sit beside the new field error.
      if (event.detail.elt.id === "create-kb" && !kbNameIsValid(form)) {
        event.preventDefault();
        clearNotice();
      }
    });
    document.body.addEventListener("htmx:afterRequest", (event) => {
      const elt = event.detail.elt;
      if (event.detail.successful && elt.id === "create-kb") {
        elt.querySelector("#kb_name").value = "";
      }
    });
  }

  // A list or detail that cannot load says why in its own place (else "Loading…" stays for
  // ever) with a way back. A 404 uses the page's own words (data-not-found); a 401 says a key is
  // needed, or that the one given was refused, with a way to enter one (the dialog may have been
  // closed). A refusal (401, 403, 404) removes what only made sense with access to the thing
  // (data-gone-removes: the upload zone of a KB gone or out of the key's reach).
  function fragmentFailed(target, status, message) {
    target.removeAttribute("aria-busy");
    target.dataset.failed = String(status);
    const text = status === 404 && target.dataset.notFound ? target.dataset.notFound
      : status === 401 ? (apiKey() ? T.key_refused : T.key_missing)
      : (T.error || "Error") + ": " + (message || status);
    const way = status === 401
      ? el("button", { type: "button", class: "primary", text: T.use_key || "API key", onclick: askForKey })
      : el("a", { href: "/", text: "← " + (T.kbs_title || "Knowledge bases") });
    target.replaceChildren(el("p", { class: "error", role: "alert", text: text }), el("p", {}, way));
    const gone = [401, 403, 404].includes(status) && target.dataset.goneRemoves;
    if (gone && document.getElementById(gone)) document.getElementById(gone).remove();
  }

  // The store's rule for a KB name (the input's pattern), told in words before anything is sent:
  // the form is novalidate so that every error shows in its field, not in a browser bubble.
  function kbNameIsValid(form) {
    const input = form.querySelector("#kb_name");
    if (input.validity.valid) return true;
    markField(form, "kb_name", input.validity.valueMissing ? T.kb_name_needed : T.kb_name_rule);
    return false;
  }

  function markField(form, field, message) {
    const input = form.querySelector('[name="' + CSS.escape(field) + '"], [name="creation__' + CSS.escape(field) + '"]');
    if (!input) return;
    input.setAttribute("aria-invalid", "true");
    const holder = input.closest(".field");
    const slot = holder && holder.querySelector(".field-error");
    if (slot) { slot.textContent = message; slot.hidden = false; }
    input.focus();
  }

  function clearFieldErrors(form) {
    form.querySelectorAll("[aria-invalid]").forEach((n) => n.removeAttribute("aria-invalid"));
    form.querySelectorAll(".field-error").forEach((n) => { n.hidden = true; n.textContent = ""; });
  }

  // Things inside freshly swapped fragments: show_if fields, page thumbnails, downloads.
  function wireFragment(root) {
    applyShowIf(root.closest("form") || root);
    root.querySelectorAll("img[data-src]").forEach(loadImage);
  }

  // Delegated, so buttons in server-rendered pages and swapped fragments work alike.
  function setupClicks() {
    document.addEventListener("click", (event) => {
      const target = event.target.closest ? event.target : null;
      if (!target) return;
      const downloadButton = target.closest("[data-download]");
      if (downloadButton) download(downloadButton.dataset.download, downloadButton.dataset.filename);
      const session = target.closest("button.session");
      if (session) openSession(session.dataset.session, session.dataset.kbs);
      const remove = target.closest("[data-delete]");
      if (remove) removeThing(remove);
    });
  }

  // DELETE through the API (a method no cross-site form can send), after a confirmation. The
  // button is disabled until the answer is in, so a double click asks and deletes once.
  async function removeThing(button) {
    if (button.disabled) return;
    button.disabled = true;
    try {
      await confirmAndDelete(button);
    } finally {
      button.disabled = false;
    }
  }

  async function confirmAndDelete(button) {
    if (!window.confirm(button.dataset.confirm)) return;
    const response = await api(button.dataset.delete, { method: "DELETE" });
    if (!response.ok) { notice(await errorMessage(response), "err"); return; }
    if (button.dataset.delete.startsWith("/sessions/") && button.dataset.delete.endsWith("/" + sessionId)) {
      leaveConversation();
    }
    if (window.htmx) htmx.trigger(document.body, button.dataset.changed);
  }

  function applyShowIf(form) {
    const values = {};
    form.querySelectorAll("[name^='creation__']").forEach((input) => {
      const name = input.name.slice("creation__".length);
      values[name] = input.type === "checkbox" ? input.checked : input.value;
    });
    form.querySelectorAll("[data-show-if]").forEach((field) => {
      let condition = {};
      try { condition = JSON.parse(field.dataset.showIf); } catch (e) { condition = {}; }
      const shown = Object.entries(condition).every(([other, wanted]) => {
        const allowed = Array.isArray(wanted) ? wanted : [wanted];
        return allowed.some((v) => String(v) === String(values[other]));
      });
      field.hidden = !shown;
      field.querySelectorAll("input, select, textarea").forEach((i) => { i.disabled = !shown; });
    });
  }

  async function loadImage(img) {
    const response = await api(img.dataset.src);
    if (!response.ok) { img.alt = img.alt + " — " + (await errorMessage(response)); return; }
    img.src = URL.createObjectURL(await response.blob());
  }

  async function download(path, filename) {
    const response = await api(path);
    if (!response.ok) { notice(await errorMessage(response), "err"); return; }
    const link = el("a", { href: URL.createObjectURL(await response.blob()), download: filename || "download" });
    document.body.append(link);
    link.click();
    link.remove();
  }

  // --- uploads with live progress ---------------------------------------------------------------

  function setupUploads() {
    const zone = document.getElementById("dropzone");
    if (!zone) return;
    const kb = document.getElementById("kb-title").dataset.kb;
    const input = document.getElementById("file-input");
    const start = (files) => { for (const file of files) upload(kb, { file: file }); };
    window.addEventListener("beforeunload", warnBeforeLeaving);
    input.addEventListener("change", () => { start(input.files); input.value = ""; });
    zone.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); input.click(); } });
    zone.addEventListener("dragover", (e) => { e.preventDefault(); zone.classList.add("over"); });
    zone.addEventListener("dragleave", () => zone.classList.remove("over"));
    zone.addEventListener("drop", (e) => {
      e.preventDefault();
      zone.classList.remove("over");
      start(e.dataTransfer.files);
    });
    document.getElementById("url-form").addEventListener("submit", (e) => {
      e.preventDefault();
      const box = document.getElementById("url-input");
      for (const line of box.value.split("\n")) if (line.trim()) upload(kb, { url: line.trim() });
      box.value = "";
    });
  }

  // A browser opens about six connections per server and every progress stream holds one, so
  // a drop of many files runs a few at a time; the rest wait their turn (shown as queued).
  const MAX_ACTIVE = 3;
  const TASK_STATUSES = ["queued", "processing", "completed", "failed"];
  let active = 0;
  let sending = 0;
  const waiting = [];

  // Files still waiting their turn or being sent live only in this page: leaving would drop
  // them, so the browser asks first. Once sent, the server has them; leaving loses nothing.
  function warnBeforeLeaving(event) {
    if (!sending && !waiting.length) return;
    event.preventDefault();
    event.returnValue = "";
  }

  function limited(job) {
    waiting.push(job);
    pump();
  }

  function pump() {
    while (active < MAX_ACTIVE && waiting.length) {
      const job = waiting.shift();
      active += 1;
      Promise.resolve().then(job).catch(() => {}).finally(() => { active -= 1; pump(); });
    }
  }

  function uploadRow(name) {
    const status = el("span", { class: "badge queued", text: T.queued || "queued" });
    const phase = el("span", { class: "muted small phase" });
    const bar = el("progress", { max: 1, value: 0 });
    const reason = el("div", { class: "reason", hidden: true });
    const actions = el("span", { class: "row-actions" });
    const row = el("li", { "data-upload": name },
      el("span", { class: "name", dir: "auto", text: name }), el("span", {}, status, " ", phase, " ", actions), bar, reason);
    document.getElementById("uploads").prepend(row);
    return { row, status, phase, bar, reason, actions };
  }

  function showTask(ui, task) {
    ui.row.dataset.status = task.status;
    if (task.phase && !(ui.row.dataset.phases || "").split(",").includes(task.phase)) {
      ui.row.dataset.phases = (ui.row.dataset.phases ? ui.row.dataset.phases + "," : "") + task.phase;
    }
    ui.status.className = "badge " + task.status;
    ui.status.textContent = T[task.status] || task.status;
    const progress = task.progress || {};
    const total = progress.total || 0;
    // A phase that is itself a status says nothing the badge does not, or contradicts it: a task
    // a worker has just claimed is "processing" while its phase still reads "queued".
    const phase = task.phase && !TASK_STATUSES.includes(task.phase) ? task.phase : "";
    ui.phase.textContent = [phase, total ? progress.current + "/" + total : ""].filter(Boolean).join(" ");
    if (total) { ui.bar.max = total; ui.bar.value = progress.current || 0; }
    if (task.status === "completed") { ui.bar.max = 1; ui.bar.value = 1; }
  }

  function showFailure(ui, message, retry) {
    ui.row.dataset.status = "failed";
    ui.status.className = "badge failed";
    ui.status.textContent = T.failed || "failed";
    ui.reason.textContent = message;
    ui.reason.hidden = false;
    ui.actions.replaceChildren();
    if (retry) ui.actions.append(el("button", { type: "button", class: "retry", text: T.retry || "Retry", onclick: retry }));
  }

  function upload(kb, item) {
    const ui = uploadRow(item.file ? item.file.name : item.url);
    limited(() => sendOrSay(kb, item, ui));
  }

  // Whatever goes wrong in a row's upload is said in the row, not lost in the queue.
  function sendOrSay(kb, item, ui) {
    return send(kb, item, ui).catch((e) => showFailure(ui, String(e), resend(kb, item, ui)));
  }

  function resend(kb, item, ui) {
    return () => {
      ui.reason.hidden = true;
      ui.actions.replaceChildren();
      ui.phase.textContent = "";
      ui.row.dataset.status = "queued";
      ui.status.className = "badge queued";
      ui.status.textContent = T.queued || "queued";
      limited(() => sendOrSay(kb, item, ui));
    };
  }

  async function send(kb, item, ui) {
    const form = new FormData();
    form.append("kb_name", kb);
    if (item.file) form.append("file", item.file, item.file.name);
    else form.append("url", item.url);
    let response;
    sending += 1;
    try {
      response = await api("/ingest", { method: "POST", body: form });
    } catch (e) {
      showFailure(ui, String(e), resend(kb, item, ui));
      return;
    } finally {
      sending -= 1;
    }
    if (!response.ok) {
      showFailure(ui, await errorMessage(response), retryable(response.status) ? resend(kb, item, ui) : null);
      return;
    }
    const submission = await response.json();
    ui.row.dataset.job = submission.job_id;
    if (submission.dedup_hit) {
      ui.row.dataset.status = "completed";
      ui.status.className = "badge completed";
      ui.status.textContent = T.unchanged || "unchanged";
      ui.bar.max = 1; ui.bar.value = 1;
      return;
    }
    await follow(ui, submission.job_id);
  }

  // A refused upload (empty, mislabeled, too large: a 4xx) fails the same way every time; only a
  // timeout, rate limit or server-side failure may pass on a second try.
  function retryable(status) { return status >= 500 || status === 408 || status === 429; }

  async function follow(ui, jobId) {
    const last = await watch(ui, jobId);
    if (last && last.status === "failed") {
      showFailure(ui, last.error || (T.failed || "failed"), async () => {
        ui.reason.hidden = true;
        ui.actions.replaceChildren();
        const response = await api("/tasks/" + encodeURIComponent(jobId) + "/retry", { method: "POST" });
        if (!response.ok) { showFailure(ui, await errorMessage(response), null); return; }
        await follow(ui, jobId);
      });
    }
    if (window.htmx) htmx.trigger(document.body, "docs-changed");
  }

  // A progress stream can drop before its `done` (a server restart, a network blip) while the
  // task goes on. The row then looks the task up (GET /tasks/{id}: one that ended meanwhile is
  // shown at once) and reconnects, pausing longer each time; a stream that says anything starts
  // the count again. Past the last try the row says contact was lost and offers to look again.
  const RECONNECTS = 6;
  const TERMINAL = ["completed", "failed"];

  async function watch(ui, jobId) {
    const path = "/tasks/" + encodeURIComponent(jobId);
    let last = null;
    for (let tries = 0; tries <= RECONNECTS; tries += 1) {
      if (tries) {
        await new Promise((r) => setTimeout(r, Math.min(500 * 2 ** (tries - 1), 8000)));
        const task = await lookUp(path);
        if (task && task.gone) { showFailure(ui, task.gone, null); return null; }
        if (task) { last = task; showTask(ui, task); }
        if (task && TERMINAL.includes(task.status)) return task;
      }
      try {
        for await (const { event, data } of sse(path + "/stream")) {
          if (event === "progress" || event === "done") { last = data; showTask(ui, data); tries = 0; }
          if (event === "done") return last;
          if (event === "error" && !/^5\d\d$/.test(data.code)) {
            showFailure(ui, errorText(data, String(data)), null);
            return null;
          }
          if (event === "error") break; // a 5xx: a server or proxy on its way back
        }
      } catch (e) { /* the connection dropped: try again */ }
    }
    showFailure(ui, T.stream_lost || "Lost contact with the server.", () => {
      ui.reason.hidden = true;
      ui.actions.replaceChildren();
      follow(ui, jobId);
    });
    return null;
  }

  // The task as GET /tasks/{id} tells it; {gone} when it is no more; null when unreachable.
  async function lookUp(path) {
    let response;
    try { response = await api(path); } catch (e) { return null; }
    if (response.ok) return response.json().catch(() => null);
    if (response.status === 404) return { gone: await errorMessage(response) };
    return null;
  }

  // --- Ask -------------------------------------------------------------------------------------

  let sessionId = null;
  // A new conversation, one reopened or the open one deleted starts a new generation. An answer
  // still streaming for an earlier one is read to its end (the server stores it with its own
  // conversation) but touches nothing of the new one: not its session, not its thread.
  let conversation = 0;

  function leaveConversation() {
    conversation += 1;
    sessionId = null;
    document.getElementById("thread").replaceChildren();
  }

  function setupAsk() {
    const form = document.getElementById("ask-form");
    if (!form) return;
    const box = document.getElementById("question");
    box.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); form.requestSubmit(); }
    });
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const question = box.value.trim();
      if (!question) return;
      const kbs = [...document.querySelectorAll("#kb-picker input[name=kb_names]:checked")].map((i) => i.value);
      if (!kbs.length) { notice(T.pick_kb || "Choose a knowledge base", "err"); return; }
      clearNotice();
      box.value = "";
      ask(question, kbs);
    });
    document.getElementById("new-chat").addEventListener("click", () => {
      leaveConversation();
      clearNotice();
      box.focus();
    });
    const preview = document.getElementById("preview");
    document.getElementById("preview-close").addEventListener("click", () => preview.close());
    preview.addEventListener("close", () => { previewGeneration += 1; });
    setupHovercard();
  }

  function userMessage(text) {
    return el("div", { class: "msg user" }, el("div", { class: "who", text: T.you || "You" }), el("div", { class: "answer", dir: "auto", text: text }));
  }

  function assistantShell() {
    const steps = el("ol", { class: "steps", "aria-label": T.steps || "Steps" });
    const answer = el("div", { class: "answer", dir: "auto" });
    const error = el("p", { class: "error", hidden: true, role: "alert" });
    const sources = el("div", { class: "sources-slot" });
    const msg = el("div", { class: "msg assistant", "aria-busy": "true" },
      el("div", { class: "who", text: T.answer || "Answer" }), steps, answer, error, sources);
    return { msg, steps, answer, error, sources };
  }

  function addStep(list, step) {
    const ms = typeof step.ms === "number" ? " " + step.ms.toFixed(step.ms < 10 ? 1 : 0) + " ms" : "";
    list.append(el("li", { class: step.status || "", title: stepDetail(step) || null, text: step.name + ms }));
  }

  // A step's own fields (why it was skipped, what it used, what it warned about) as its tooltip.
  // Chunk ids (text_top, visual_top) mean nothing to a reader and are left out.
  const UNSHOWN_STEP_FIELDS = new Set(["name", "status", "ms", "text_top", "visual_top"]);

  function stepDetail(step) {
    const lines = [];
    if (step.status && step.status !== "ok") lines.push(step.status);
    for (const [key, value] of Object.entries(step)) {
      if (UNSHOWN_STEP_FIELDS.has(key) || value === null || value === "" ||
          (Array.isArray(value) && !value.length)) continue;
      const shown = Array.isArray(value) ? value.join(", ")
        : typeof value === "object" ? JSON.stringify(value) : String(value);
      lines.push(key + ": " + shown);
    }
    return lines.join("\n");
  }

  async function ask(question, kbs) {
    const thread = document.getElementById("thread");
    thread.append(userMessage(question));
    const ui = assistantShell();
    thread.append(ui.msg);
    const body = { query: question, kb_names: kbs };
    if (sessionId) body.session_id = sessionId;
    const generation = conversation;
    // A turn that ends without an answer leaves no session it opened (the server deletes it):
    // the next question must not name it.
    const before = sessionId;
    let answered = false;
    let text = "";
    try {
      for await (const { event, data } of sse("/query/stream", {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
      })) {
        if (generation !== conversation) continue;
        if (event === "session") { sessionId = data.session_id; }
        else if (event === "step") addStep(ui.steps, data);
        else if (event === "token") { text += data.delta || ""; ui.answer.textContent = text; }
        else if (event === "done") {
          // Citations only now: a stream that fails midway must not show links to sources.
          (data.steps || []).filter((s) => s.name === "generate").forEach((s) => addStep(ui.steps, s));
          renderAnswer(ui, data.answer || text, data.sources || { text: [], image: [] });
          if (data.session_id) sessionId = data.session_id;
          answered = true;
        } else if (event === "error") {
          ui.error.textContent = (T.error || "Error") + ": " + errorText(data, "");
          ui.error.hidden = false;
        }
      }
    } catch (e) {
      ui.error.textContent = (T.error || "Error") + ": " + e;
      ui.error.hidden = false;
    }
    if (!answered && generation === conversation) sessionId = before;
    ui.msg.removeAttribute("aria-busy");
    if (window.htmx) htmx.trigger(document.body, "sessions-changed");
  }

  // The answer with every [n] turned into a button for source n (text sources only).
  function renderAnswer(ui, answer, sources) {
    const byIndex = new Map((sources.text || []).map((s) => [s.index, s]));
    ui.answer.replaceChildren();
    const pattern = /\[(\d+)\]/g;
    let at = 0;
    let match;
    while ((match = pattern.exec(answer)) !== null) {
      ui.answer.append(document.createTextNode(answer.slice(at, match.index)));
      const source = byIndex.get(Number(match[1]));
      if (source) ui.answer.append(citeButton(source));
      else ui.answer.append(document.createTextNode(match[0]));
      at = pattern.lastIndex;
    }
    ui.answer.append(document.createTextNode(answer.slice(at)));
    ui.sources.replaceChildren(sourceList(sources));
  }

  function citeButton(source) {
    const button = el("button", { type: "button", class: "cite", text: "[" + source.index + "]",
      "data-index": source.index, "aria-label": (T.source || "Source") + " " + source.index + ": " + (source.filename || "") });
    button._source = source;
    button.addEventListener("click", () => openPreview(source));
    return button;
  }

  function sourceList(sources) {
    const texts = sources.text || [];
    const images = sources.image || [];
    const details = el("details", { class: "sources" },
      el("summary", { text: (T.sources || "Sources") + " (" + (texts.length + images.length) + ")" }));
    for (const s of texts) {
      const pages = pagesOf(s);
      details.append(el("div", { class: "source", "data-index": s.index },
        el("div", {}, citeButton(s), " ", el("strong", { class: "wrap", dir: "auto", text: s.filename || s.document_id }),
          el("span", { class: "muted small", text: " · " + (s.path || "") + (pages.length ? " · " + (T.page || "p.") + " " + pages.join(", ") : "") + " · " + (T.score || "score") + " " + fmtScore(s.score) })),
        el("pre", { dir: "auto", text: s.content || "" })));
    }
    if (images.length) {
      const row = el("div", { class: "thumbs" });
      for (const img of images) {
        const figure = el("figure", {}, el("img", { alt: img.content_summary || img.filename || "", "data-src": img.image_id ? "/images/" + encodeURIComponent(img.image_id) : img.page ? "/documents/" + encodeURIComponent(img.document_id) + "/pages/" + img.page + "?width=300" : "" }),
          el("figcaption", { class: "small wrap", dir: "auto", text: (img.filename || "") + (img.page ? " · " + img.page : "") }));
        row.append(figure);
      }
      details.append(el("h3", { text: T.images || "Images" }), row);
      row.querySelectorAll("img[data-src]").forEach((i) => { if (i.dataset.src) loadImage(i); });
    }
    return details;
  }

  function fmtScore(score) { return typeof score === "number" ? score.toFixed(3) : "–"; }

  // The source's own `boxes` (the wire field), else its chunk metadata's; only well-formed ones.
  function boxesOf(source) {
    const valid = (list) => (Array.isArray(list) ? list : []).filter((b) =>
      b && Number.isInteger(b.page) && b.page >= 1 && Array.isArray(b.bbox) && b.bbox.length === 4 &&
      b.bbox.every((v) => typeof v === "number" && v >= 0 && v <= 1));
    const own = valid(source.boxes);
    return own.length ? own : valid(source.metadata && source.metadata.boxes);
  }

  function pagesOf(source) {
    const pages = new Set(boxesOf(source).map((b) => b.page));
    for (const p of source.page_nums || []) pages.add(p);
    return [...pages].sort((a, b) => a - b);
  }

  // --- hovercard ------------------------------------------------------------------------------

  function setupHovercard() {
    const card = document.getElementById("hovercard");
    let timer = null;
    const show = (button) => {
      const s = button._source;
      if (!s) return;
      clearTimeout(timer);
      const pages = pagesOf(s);
      card.replaceChildren(
        el("strong", { class: "wrap", dir: "auto", text: "[" + s.index + "] " + (s.filename || s.document_id) }),
        el("div", { class: "muted small wrap", dir: "auto", text: s.path || "" }),
        el("div", { class: "excerpt", dir: "auto", text: (s.content || "").slice(0, 600) }),
        el("div", { class: "muted small", text: (pages.length ? (T.page || "Page") + " " + pages.join(", ") + " · " : "") + (T.score || "Score") + " " + fmtScore(s.score) }));
      card.dataset.index = s.index;
      card.hidden = false;
      const rect = button.getBoundingClientRect();
      const width = Math.min(420, window.innerWidth * 0.92);
      const left = Math.max(4, Math.min(rect.left + window.scrollX, window.scrollX + window.innerWidth - width - 4));
      card.style.left = left + "px";
      card.style.top = (rect.bottom + window.scrollY + 6) + "px";
      button.setAttribute("aria-describedby", "hovercard");
    };
    const hide = () => { timer = setTimeout(() => { card.hidden = true; }, 150); };
    document.addEventListener("mouseover", (e) => { const b = e.target.closest && e.target.closest(".cite"); if (b) show(b); });
    document.addEventListener("mouseout", (e) => { if (e.target.closest && e.target.closest(".cite")) hide(); });
    // Closing the preview gives focus back to the [n] that opened it (before the dialog's
    // "close" event): that focus is not the reader asking for the card again.
    let opener = null;
    document.addEventListener("click", (e) => { const b = e.target.closest && e.target.closest(".cite"); if (b) opener = b; });
    document.getElementById("preview").addEventListener("close", () => { opener = null; });
    document.addEventListener("focusin", (e) => {
      const b = e.target.closest && e.target.closest(".cite");
      if (b && b !== opener) show(b);
    });
    document.addEventListener("focusout", (e) => { if (e.target.closest && e.target.closest(".cite")) hide(); });
    document.addEventListener("keydown", (e) => { if (e.key === "Escape") card.hidden = true; });
    card.addEventListener("mouseover", () => clearTimeout(timer));
    card.addEventListener("mouseout", hide);
  }

  // --- page preview with highlighted boxes ----------------------------------------------------

  // Each opening and each closing starts a new generation. A page load that finds, after any
  // await, that its generation has passed stops there: an earlier citation's pages must never
  // be added under a later citation's header.
  let previewGeneration = 0;

  async function openPreview(source) {
    const generation = ++previewGeneration;
    const current = () => generation === previewGeneration;
    const dialog = document.getElementById("preview");
    const holder = document.getElementById("preview-pages");
    const meta = document.getElementById("preview-meta");
    document.getElementById("hovercard").hidden = true;
    holder.replaceChildren();
    meta.textContent = "[" + source.index + "] " + (source.filename || "") + " · " + (source.path || "");
    dialog.dataset.index = source.index;
    dialog.showModal();
    const boxes = boxesOf(source);
    const pages = pagesOf(source);
    if (!boxes.length) holder.append(el("p", { class: "muted", text: pages.length ? T.no_boxes : T.no_pages }));
    if (!pages.length) { holder.append(el("pre", { class: "text", dir: "auto", text: source.content || "" })); return; }
    for (const page of pages) {
      const frame = el("div", { class: "page", "data-page": page });
      const img = el("img", { alt: (T.page || "Page") + " " + page });
      frame.append(img);
      for (const box of boxes.filter((b) => b.page === page)) {
        const [x0, y0, x1, y1] = box.bbox.map(Number);
        const mark = el("div", { class: "box", "data-bbox": box.bbox.join(",") });
        mark.style.left = (x0 * 100) + "%";
        mark.style.top = (y0 * 100) + "%";
        mark.style.width = ((x1 - x0) * 100) + "%";
        mark.style.height = ((y1 - y0) * 100) + "%";
        frame.append(mark);
      }
      holder.append(el("div", { class: "page-label", text: (T.page || "Page") + " " + page }), frame);
      const response = await api("/documents/" + encodeURIComponent(source.document_id) + "/pages/" + page + "?width=1000");
      if (!current()) return;
      if (!response.ok) {
        const message = response.status === 404 ? T.no_pages : await errorMessage(response);
        if (!current()) return;
        frame.replaceWith(el("p", { class: "muted", text: message }));
        continue;
      }
      const image = await response.blob();
      if (!current()) return;
      img.src = URL.createObjectURL(image);
      await img.decode().catch(() => {});
      if (!current()) return;
      frame.dataset.loaded = "true";
    }
    const first = holder.querySelector(".box");
    if (first) first.scrollIntoView({ block: "center" });
  }

  // --- sessions -------------------------------------------------------------------------------

  async function openSession(id, kbs) {
    leaveConversation();
    const generation = conversation;
    const response = await api("/sessions/" + encodeURIComponent(id) + "/messages");
    if (!response.ok) { notice(await errorMessage(response), "err"); return; }
    const body = await response.json();
    if (generation !== conversation) return; // another conversation was opened meanwhile
    sessionId = id;
    const wanted = new Set((kbs || "").split(",").filter(Boolean));
    document.querySelectorAll("#kb-picker input[name=kb_names]").forEach((i) => { i.checked = wanted.has(i.value); });
    const thread = document.getElementById("thread");
    thread.replaceChildren();
    for (const m of body.messages) {
      if (m.role === "user") { thread.append(userMessage(m.content)); continue; }
      const ui = assistantShell();
      ui.msg.removeAttribute("aria-busy");
      for (const step of m.steps || []) addStep(ui.steps, step);
      renderAnswer(ui, m.content, m.sources || { text: [], image: [] });
      thread.append(ui.msg);
    }
  }

  // --- language switch ------------------------------------------------------------------------

  function setupLanguage() {
    const button = document.getElementById("lang-switch");
    button.addEventListener("click", () => {
      document.cookie = "eagle_lang=" + button.dataset.lang + "; path=/; max-age=31536000; SameSite=Lax";
      location.reload();
    });
  }

  function setupShowIf() {
    document.body.addEventListener("change", (e) => {
      const form = e.target.closest && e.target.closest("form");
      if (form && e.target.name && e.target.name.startsWith("creation__")) applyShowIf(form);
    });
  }

  setupKey();
  setupHtmx();
  setupLanguage();
  setupShowIf();
  setupUploads();
  setupAsk();
  setupClicks();
  wireFragment(document.getElementById("main"));
})();
