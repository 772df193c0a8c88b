// The chat page: plain JavaScript, no build step, nothing loaded from elsewhere.
//
// The page holds no data of its own (GET /ui is served without authentication); everything
// comes from the API on this origin, with the server's token when it has one: asked for
// once, when a call answers 401, and kept for this tab in sessionStorage. Text from the
// notes and the models is always set as text (textContent), never parsed as HTML.
"use strict";

(() => {
  const GRAPH = "agentic_rag";
  const TOKEN_KEY = "notes-rag-token";
  const COLLECTION_KEY = "notes-rag-collection";
  // Nodes whose streamed tokens are the answer; the others' model calls are decisions.
  const ANSWERING = new Set(["generate", "image"]);
  // The served graph's limits on images (graph/images.py): refused there anyway.
  const MAX_IMAGES = 4;
  const MAX_IMAGE_BYTES = 20 * 1024 * 1024;
  const THREADS_SHOWN = 50;
  // A conversation's labels (collection, filters, title) are its thread's metadata, which the
  // server bounds (RAG_MAX_METADATA_BYTES, 16 KB by default): the title is cut, and filters
  // too many to fit are not kept (the conversation says so when reopened).
  const TITLE_CHARS = 200;
  const LABEL_BYTES = 8 * 1024;
  // Checkpoints read to rebuild a thread: a run writes about six.
  const HISTORY_LIMIT = 300;
  const REASONS = {
    empty_collection: "The collection is empty",
    filter_empty: "No note matches the filters",
    below_threshold: "Nothing in the notes is similar enough",
    all_irrelevant: "The closest sections were judged not relevant",
    unsupported: "Checked against your notes, the answer is not what they state",
  };

  // What the graph reports while it works (graph/progress.py), in words; "written" and
  // "grading" are worded from their fields.
  const STAGES = {
    routing: "Choosing how to answer",
    rewriting: "Rewriting the follow-up as a question of its own",
    searching: "Searching your notes",
    writing: "Writing the answer",
    calculating: "Calculating",
    looking: "Looking at the image",
  };
  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

  function describeProgress(event) {
    switch (event.stage) {
      case "searched":
        return `Found ${plural(event.found || 0, "section")}`;
      case "grading":
        return `Grading ${event.done || 0} of ${plural(event.total || 0, "section")} (${event.kept || 0} relevant)`;
      case "written":
        return event.checking ? "Checking against your notes…" : "Answer written";
      case "checked":
        if (event.stated === null || event.stated === undefined) return "Checked: verdict unreadable, answer kept";
        if (event.stated && event.by === "figures") return "Checked: its figures are in your notes";
        if (event.stated && event.by === "names") return "Checked: the names it gives are in your notes";
        return event.stated ? "Checked: stated in your notes" : "Checked: not stated in your notes";
      default:
        return STAGES[event.stage] || String(event.stage);
    }
  }

  const $ = (id) => document.getElementById(id);
  const ui = {
    collection: $("collection"),
    collectionInfo: $("collection-info"),
    showReasoning: $("show-reasoning"),
    newThread: $("new-thread"),
    threadList: $("thread-list"),
    threadsPanel: $("threads-panel"),
    status: $("status"),
    scroller: $("scroller"),
    log: $("log"),
    form: $("ask"),
    question: $("question"),
    image: $("image"),
    attachments: $("attachments"),
    send: $("send"),
    stop: $("stop"),
    filters: $("filters"),
    filterCount: $("filter-count"),
    filtersNote: $("filters-note"),
    tags: $("tags").querySelector(".facet-list"),
    folders: $("folders").querySelector(".facet-list"),
    sectionView: $("section-view"),
    sectionTitle: $("section-title"),
    sectionWhere: $("section-where"),
    sectionText: $("section-text"),
    sectionClose: $("section-close"),
    imageView: $("image-view"),
    imageFull: $("image-full"),
    imageName: $("image-name"),
    imageClose: $("image-close"),
    tokenDialog: $("token-dialog"),
    tokenForm: $("token-form"),
    token: $("token"),
    tokenError: $("token-error"),
  };

  const state = {
    thread: null, // the current thread's id; null until the first question
    // The current thread's collection and filters ({collection, tags, folders}): what its
    // follow-ups are asked with. null for a new conversation, or a thread older than these
    // labels (its next question records them).
    labels: null,
    vaults: {}, // collection -> Obsidian vault name ('' when not a vault)
    images: [], // {file, url, base64}
    collections: [], // the rows of /rag/collections
    busy: false,
    // The run being answered: {thread, runId (from its first event), controller, stopping}.
    running: null,
  };

  // ---------------------------------------------------------------- the API, with the token

  class ApiError extends Error {
    constructor(status, detail) {
      super(detail);
      this.status = status;
    }
  }

  let tokenAsked = null; // one dialog for every call waiting on a token

  function askToken(message) {
    if (!tokenAsked) {
      tokenAsked = new Promise((resolve) => {
        ui.tokenError.textContent = message;
        ui.token.value = "";
        ui.tokenDialog.showModal();
        ui.token.focus();
        const done = (event) => {
          event.preventDefault();
          const value = ui.token.value.trim();
          if (!value) return;
          sessionStorage.setItem(TOKEN_KEY, value);
          ui.tokenForm.removeEventListener("submit", done);
          ui.tokenDialog.close();
          tokenAsked = null;
          resolve();
        };
        ui.tokenForm.addEventListener("submit", done);
      });
    }
    return tokenAsked;
  }

  // The token dialog cannot be dismissed: without the token nothing on the page works.
  ui.tokenDialog.addEventListener("cancel", (event) => event.preventDefault());

  async function api(path, { method = "GET", body, signal } = {}) {
    for (;;) {
      const token = sessionStorage.getItem(TOKEN_KEY);
      const headers = {};
      if (token) headers.Authorization = `Bearer ${token}`;
      if (body !== undefined) headers["Content-Type"] = "application/json";
      const response = await fetch(path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
        cache: "no-store",
        credentials: "omit",
        referrerPolicy: "no-referrer",
      });
      if (response.status === 401) {
        await askToken(token ? "The server refused that token: check it and try again." : "");
        continue;
      }
      if (!response.ok) throw new ApiError(response.status, await detail(response));
      return response;
    }
  }

  async function detail(response) {
    const text = await response.text();
    try {
      const parsed = JSON.parse(text);
      return String(parsed.detail || parsed.message || parsed.error || text);
    } catch {
      return text || `HTTP ${response.status}`;
    }
  }

  const getJson = async (path) => (await api(path)).json();
  const postJson = async (path, body) => (await api(path, { method: "POST", body })).json();

  // Server-sent events of a streamed run: {event, data} as each block completes.
  async function* events(response) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "");
        const parsed = parseEvent(block);
        if (parsed) yield parsed;
      }
    }
  }

  function parseEvent(block) {
    let event = "message";
    const data = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    if (!data.length) return null;
    try {
      return { event, data: JSON.parse(data.join("\n")) };
    } catch {
      return { event, data: data.join("\n") };
    }
  }

  // ------------------------------------------------- reasoning kept out of the streamed answer

  // graph/llm.py's ReasoningFilter, ported: a reply that starts with <think>…</think> has its
  // reasoning split off, even when the tags arrive cut across pieces.
  const OPEN = "<think>";
  const CLOSE = "</think>";

  class ReasoningFilter {
    constructor() {
      this.state = "start"; // start -> (thinking -> after ->) answer
      this.pending = "";
    }

    // [reasoning, answer] text that this piece completes.
    feed(piece) {
      this.pending += piece;
      if (this.state === "start") {
        const head = this.pending.trimStart();
        if (!head || (OPEN.startsWith(head) && head !== OPEN)) return ["", ""];
        if (!head.startsWith(OPEN)) {
          const text = this.pending;
          this.state = "answer";
          this.pending = "";
          return ["", text];
        }
        this.state = "thinking";
        this.pending = head.slice(OPEN.length);
      }
      if (this.state === "thinking") {
        const end = this.pending.indexOf(CLOSE);
        if (end < 0) {
          // Hold back what could be the start of the closing tag.
          let keep = 0;
          for (let n = CLOSE.length - 1; n > 0; n--) {
            if (this.pending.endsWith(CLOSE.slice(0, n))) {
              keep = n;
              break;
            }
          }
          const cut = this.pending.length - keep;
          const out = this.pending.slice(0, cut);
          this.pending = this.pending.slice(cut);
          return [out, ""];
        }
        const reasoning = this.pending.slice(0, end);
        const rest = this.pending.slice(end + CLOSE.length);
        this.state = "after";
        this.pending = "";
        return [reasoning, this.after(rest)];
      }
      const text = this.pending;
      this.pending = "";
      return ["", this.after(text)];
    }

    after(text) {
      // Blank lines separate the block from the answer; they are not part of it.
      if (this.state === "after") {
        text = text.trimStart();
        if (text) this.state = "answer";
      }
      return text;
    }
  }

  function contentText(content) {
    if (typeof content === "string") return content;
    if (Array.isArray(content)) {
      return content.map((part) => (typeof part === "string" ? part : part?.text || "")).join("");
    }
    return "";
  }

  // ---------------------------------------------------------------------------- DOM helpers

  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children) {
      if (child !== null && child !== undefined) node.append(child);
    }
    return node;
  }

  // The conversation follows a growing answer only while the reader is at its end: someone
  // who scrolled up to read keeps their place.
  function atEnd() {
    const s = ui.scroller;
    return s.scrollHeight - s.scrollTop - s.clientHeight < 120;
  }

  function toEnd() {
    ui.scroller.scrollTop = ui.scroller.scrollHeight;
  }

  function setStatus(text, isError = false) {
    ui.status.textContent = text;
    ui.status.classList.toggle("error", isError);
  }

  function sourceLabel(path, heading) {
    return heading ? `${path} › ${heading.replaceAll(" > ", " › ")}` : path;
  }

  function obsidianLink(vault, path) {
    const file = path.replace(/\.md$/i, "");
    return `obsidian://open?vault=${encodeURIComponent(vault)}&file=${encodeURIComponent(file)}`;
  }

  // One cited (or nearly cited) section: a button opening its read-only view, and for an
  // Obsidian vault a link opening the note in Obsidian.
  function sourceItem(collection, path, heading, extra, number) {
    const item = el("li", { class: "source" });
    // The number an answer cites this source by, inline: [1]
    if (number) item.append(el("span", { class: "number", text: `[${number}] ` }));
    item.append(
      el("button", {
        type: "button",
        class: "link",
        "data-source": path,
        "data-heading": heading,
        text: sourceLabel(path, heading),
        title: sourceLabel(path, heading),
        "aria-label": `View the section ${sourceLabel(path, heading)}`,
        onclick: () => openSection(collection, path, heading),
      }),
    );
    if (extra) item.append(el("span", { class: "muted", text: ` ${extra}` }));
    const vault = state.vaults[collection];
    if (vault) {
      item.append(
        " ",
        el("a", {
          class: "obsidian",
          href: obsidianLink(vault, path),
          text: "Open in Obsidian",
          "aria-label": `Open ${path} in Obsidian`,
        }),
      );
    }
    return item;
  }

  async function openSection(collection, path, heading) {
    const query = new URLSearchParams({ collection, source: path, heading });
    ui.sectionTitle.textContent = heading ? heading.split(" > ").pop() : path;
    ui.sectionWhere.textContent = `${sourceLabel(path, heading)} — as indexed in ${collection}`;
    ui.sectionText.textContent = "Loading…";
    ui.sectionView.showModal();
    try {
      const found = await getJson(`/rag/section?${query}`);
      ui.sectionText.textContent = found.text;
    } catch (error) {
      ui.sectionText.textContent = `Cannot show this section: ${error.message}`;
    }
  }

  ui.sectionClose.addEventListener("click", () => ui.sectionView.close());

  // The line nodes/no_answer.py ends a no-answer message with.
  const CLOSEST_LINE = "Closest notes: ";

  // The near misses as nodes/no_answer.py names them: each section once, with its best
  // chunk's score, best first (a long section is several chunks).
  function closest(chunks) {
    const best = new Map();
    for (const c of chunks) {
      const key = JSON.stringify([c.source, c.heading || ""]);
      const seen = best.get(key);
      if (!seen || (c.score ?? -Infinity) > (seen.score ?? -Infinity)) best.set(key, c);
    }
    return [...best.values()].sort((a, b) => (b.score ?? -Infinity) - (a.score ?? -Infinity));
  }

  function openImage(url, name) {
    ui.imageFull.src = url;
    ui.imageFull.alt = `attached image ${name}`;
    ui.imageName.textContent = name;
    ui.imageView.showModal();
  }

  ui.imageClose.addEventListener("click", () => ui.imageView.close());

  // ------------------------------------------------------------------------------ one turn

  class Turn {
    constructor(question, images, collection) {
      this.collection = collection;
      this.filters = { answer: new ReasoningFilter() };
      this.streamed = "";
      this.reasoningText = "";
      this.answer = el("div", { class: "answer-text" });
      this.reasoning = el(
        "details",
        { class: "reasoning", hidden: true },
        el("summary", { text: "Reasoning" }),
        el("pre", { class: "reasoning-text" }),
      );
      this.body = el("div", { class: "answer", "aria-busy": "true" }, this.reasoning, this.answer);
      const asked = el("div", { class: "question" }, el("p", { text: question }));
      if (images.length) {
        const thumbs = el("div", { class: "thumbs" });
        for (const image of images) {
          // Bounded in the bubble (style.css); a click shows it whole.
          thumbs.append(
            el(
              "button",
              {
                type: "button",
                class: "thumb",
                title: `${image.file.name}: click to see it full size`,
                onclick: () => openImage(image.url, image.file.name),
              },
              el("img", { src: image.url, alt: `attached image ${image.file.name}` }),
            ),
          );
        }
        asked.append(thumbs);
      }
      this.node = el("li", { class: "turn" }, asked, this.body);
      ui.log.append(this.node);
      toEnd();
    }

    // What the run is doing, with the seconds since Send, until it finishes.
    startProgress() {
      this.started = performance.now();
      this.stage = el("span", { class: "stage", text: "Sending the question" });
      this.elapsed = el("span", { class: "elapsed", "aria-hidden": "true" });
      this.progressLine = el(
        "p",
        { class: "progress", role: "status", "data-stage": "sending" },
        this.stage,
        this.elapsed,
      );
      this.body.append(this.progressLine);
      this.tick();
      this.ticker = setInterval(() => this.tick(), 100);
    }

    tick() {
      this.elapsed.textContent = `${((performance.now() - this.started) / 1000).toFixed(1)} s`;
    }

    // A progress event of the graph (the run's "custom" stream).
    progress(event) {
      if (!this.progressLine || typeof event?.stage !== "string") return;
      const follow = atEnd();
      if (event.stage === "written" && event.sources?.length) {
        // The sources as soon as the answer is written; the check's verdict comes after.
        this.sourcesBox?.remove();
        this.sourcesBox = this.sourceList(event.sources);
        this.body.insertBefore(this.sourcesBox, this.progressLine);
      }
      this.stage.textContent = describeProgress(event);
      this.progressLine.dataset.stage = event.stage;
      // When the graph reported it (seconds since the epoch): how late the page shows it.
      if (typeof event.at === "number") this.progressLine.dataset.at = String(event.at);
      if (follow) toEnd();
    }

    stopProgress() {
      clearInterval(this.ticker);
      this.progressLine?.remove();
      this.progressLine = null;
    }

    sourceList(sources) {
      const list = el("ol", { class: "sources" });
      sources.forEach((s, i) => list.append(sourceItem(this.collection, s.path, s.heading, "", i + 1)));
      return el("section", { class: "sources-box" }, el("h3", { text: "Sources" }), list);
    }

    // A streamed message piece from an answering node.
    piece(chunk) {
      const extra = chunk.additional_kwargs || {};
      let [thought, text] = this.filters.answer.feed(contentText(chunk.content));
      thought += extra.reasoning_content || "";
      if (thought && ui.showReasoning.checked) {
        this.reasoningText += thought;
        this.reasoning.hidden = false;
        this.reasoning.querySelector("pre").textContent = this.reasoningText;
      }
      if (text) {
        const follow = atEnd();
        this.streamed += text;
        this.answer.textContent = this.streamed;
        this.answer.classList.add("streaming");
        if (follow) toEnd();
      }
    }

    // The run's result (answer, sources, no-answer reason) and its path (route, grades,
    // steps, closest notes) from the thread's state.
    finish(values, details) {
      const follow = atEnd();
      this.stopProgress();
      this.sourcesBox?.remove();
      this.body.removeAttribute("aria-busy");
      this.answer.classList.remove("streaming");
      const answer = values.answer || this.streamed;
      this.answer.textContent = answer;
      const route = details?.route;
      if (route === "calculator") this.answer.classList.add("exact");
      if (values.no_answer_reason) {
        this.answer.remove();
        this.body.append(this.noAnswer(values.no_answer_reason, answer, details));
      }
      const sources = values.sources || [];
      if (sources.length) this.body.append(this.sourceList(sources));
      if (details) this.body.append(this.path(details));
      if (follow) toEnd();
    }

    noAnswer(reason, message, details) {
      // An answer the check found not stated came from its sources (listed below), not these.
      const near = reason === "unsupported" ? [] : closest(details?.near_misses || []);
      // The graph's message ends with the same notes in a line of text ("Closest notes: …",
      // nodes/no_answer.py): the list below replaces it, so each note is named once.
      const cut = message.lastIndexOf(CLOSEST_LINE);
      if (near.length && cut >= 0) message = message.slice(0, cut).trimEnd();
      const box = el(
        "section",
        { class: "no-answer", "data-reason": reason },
        // An unsupported answer is shown (the draft, then why it is not trusted): not "No answer".
        el("h3", { text: reason === "unsupported" ? "Not supported by your notes" : "No answer" }),
        el("p", { class: "reason", text: REASONS[reason] || reason }),
        el("p", { class: "answer-text", text: message }),
      );
      if (near.length) {
        const list = el("ul", { class: "closest" });
        for (const c of near) {
          const score = typeof c.score === "number" ? `(${c.score.toFixed(2)})` : "";
          list.append(sourceItem(this.collection, c.source, c.heading, score));
        }
        box.append(el("h4", { text: "Closest notes" }), list);
      }
      return box;
    }

    path(details) {
      const summary = `Path taken${details.route ? ` · ${details.route}` : ""}`;
      const box = el("details", { class: "path" }, el("summary", { text: summary }));
      const facts = el("dl");
      const fact = (name, value) => {
        if (value) facts.append(el("dt", { text: name }), el("dd", { text: value }));
      };
      fact("Route", details.route);
      if (details.standalone_question && details.standalone_question !== details.question) {
        fact("Searched for", details.standalone_question);
      }
      fact("Expression", details.expression);
      box.append(facts);
      const grades = details.grades || [];
      if (grades.length) {
        const list = el("ul", { class: "grades" });
        for (const g of grades) {
          const verdict = g.relevant ? "relevant" : "not relevant";
          list.append(
            el("li", {
              class: g.relevant ? "yes" : "no",
              text: `${sourceLabel(g.source, g.heading)}: ${verdict}${g.fallback ? " (unreadable grade, kept)" : ""}`,
            }),
          );
        }
        box.append(el("h4", { text: "Grades" }), list);
      }
      const steps = details.steps || [];
      if (steps.length) {
        const list = el("ol", { class: "steps" });
        for (const step of steps) list.append(el("li", { text: step }));
        box.append(el("h4", { text: "Steps" }), list);
      }
      return box;
    }

    // Stopped by the reader: what was streamed stays, marked as stopped.
    stopped() {
      this.stopProgress();
      this.sourcesBox?.remove();
      this.body.removeAttribute("aria-busy");
      this.answer.classList.remove("streaming");
      this.body.append(
        el("p", {
          class: "stopped",
          role: "status",
          text: "Stopped: this question is left out of the conversation.",
        }),
      );
    }

    fail(message) {
      this.stopProgress();
      this.body.removeAttribute("aria-busy");
      this.answer.classList.remove("streaming");
      this.body.append(el("p", { class: "error", role: "alert", text: message }));
    }
  }

  // ------------------------------------------------------------------------------- asking

  function chosen(list) {
    return [...list.querySelectorAll("input:checked")].map((box) => box.value);
  }

  async function ask(question) {
    const collection = ui.collection.value;
    const images = state.images;
    const context = { collection_name: collection };
    const tags = chosen(ui.tags);
    const folders = chosen(ui.folders);
    if (tags.length) context.tags = tags;
    if (folders.length) context.folders = folders;
    if (ui.showReasoning.checked) context.show_thinking = true;
    const input = { question };
    if (images.length) input.images = images.map((image) => image.base64);
    if (state.thread && state.labels?.collection && state.labels.collection !== collection) {
      // Only a thread whose collection is no longer loaded gets here (switching the picker
      // starts a new conversation): its history is about another collection's notes.
      newConversation(
        `A new conversation in “${collection}”: the last one asked “${state.labels.collection}”, which is not loaded now.`,
      );
    }
    const turn = new Turn(question, images, collection);
    turn.startProgress();
    setBusy(true);
    setStatus("Answering…");
    try {
      const labels = { collection, tags, folders };
      if (!state.thread) {
        const metadata = { graph_id: GRAPH, title: question.slice(0, TITLE_CHARS), ...keptLabels(labels) };
        const created = await postJson("/threads", { metadata });
        selectThread(created.thread_id, labels);
        loadThreads(); // listed as soon as it is asked, titled by its question
      } else if (JSON.stringify(state.labels) !== JSON.stringify(labels)) {
        // Its follow-ups are asked with the filters chosen last: reopening restores them.
        await api(`/threads/${state.thread}`, { method: "PATCH", body: { metadata: keptLabels(labels) } });
        state.labels = labels;
      }
      const thread = state.thread;
      const running = { thread, runId: null, controller: new AbortController(), stopping: false };
      state.running = running;
      if (stopAsked) throw new Stopped(); // Stop pressed before the run was sent
      const response = await api(`/threads/${thread}/runs/stream`, {
        method: "POST",
        signal: running.controller.signal,
        body: {
          assistant_id: GRAPH,
          input,
          context,
          stream_mode: ["messages-tuple", "values", "custom"],
          on_disconnect: "cancel",
        },
      });
      clearImages(false);
      let values = null;
      let failure = null;
      for await (const { event, data } of events(response)) {
        if (running.stopping) break;
        if (event === "metadata" && typeof data?.run_id === "string") {
          running.runId = data.run_id;
        } else if (event === "messages" && Array.isArray(data)) {
          const [chunk, meta] = data;
          if (chunk?.type === "AIMessageChunk" && ANSWERING.has(meta?.langgraph_node)) {
            turn.piece(chunk);
          }
        } else if (event === "custom") {
          turn.progress(data);
        } else if (event === "values") {
          values = data;
        } else if (event === "error") {
          failure = data?.message || data?.error || String(data);
        }
      }
      if (running.stopping) {
        throw new Stopped();
      } else if (failure) {
        turn.fail(failure);
        setStatus("The run failed.", true);
      } else {
        const details = (await getJson(`/threads/${thread}/state`)).values || {};
        turn.finish(values || details, details);
        setStatus("");
      }
    } catch (error) {
      if (error instanceof Stopped || state.running?.stopping || stopAsked) {
        await state.running?.cancelled;
        turn.stopped();
        setStatus("Stopped.");
      } else {
        turn.fail(error.message);
        setStatus("The question could not be answered.", true);
      }
    } finally {
      state.running = null;
      stopAsked = false;
      setBusy(false);
      loadThreads();
    }
  }

  class Stopped extends Error {}

  // Stop pressed before the run existed (its thread was still being made): it is not sent.
  let stopAsked = false;

  // Stop: the server cancels the run, rolled back (the question is left out of the thread,
  // as in `rag chat`); its model call in flight is aborted there (graph/stopping.py). Then
  // the stream is closed. A run whose id is not known yet is cancelled by closing its
  // stream (it was started with on_disconnect: cancel).
  function stopAnswer() {
    if (!state.busy) return;
    const running = state.running;
    if (!running) {
      stopAsked = true;
      ui.stop.disabled = true;
      return;
    }
    if (running.stopping) return;
    running.stopping = true;
    ui.stop.disabled = true;
    setStatus("Stopping…");
    running.cancelled = (async () => {
      if (running.runId) {
        const query = new URLSearchParams({ action: "rollback" });
        try {
          await api(`/threads/${running.thread}/runs/${running.runId}/cancel?${query}`, {
            method: "POST",
          });
        } catch {
          // ended already, or gone: closing the stream below cancels it otherwise
        }
      }
      running.controller.abort();
    })();
  }

  ui.stop.addEventListener("click", stopAnswer);
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && state.busy && !document.querySelector("dialog[open]")) {
      stopAnswer();
    }
  });

  // While a run streams, its conversation and collection stay as they are.
  function setBusy(busy) {
    state.busy = busy;
    ui.send.disabled = busy;
    ui.collection.disabled = busy;
    ui.stop.hidden = !busy;
    ui.stop.disabled = false;
  }

  // A thread's labels as its metadata: the filters only while they fit.
  function keptLabels({ collection, tags, folders }) {
    const labels = { collection, tags, folders, filters_kept: true };
    if (new TextEncoder().encode(JSON.stringify(labels)).length <= LABEL_BYTES) return labels;
    return { collection, tags: [], folders: [], filters_kept: false };
  }

  ui.form.addEventListener("submit", (event) => {
    event.preventDefault();
    const question = ui.question.value.trim();
    if (!question || state.busy) return;
    ui.question.value = "";
    ask(question);
  });

  ui.question.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      ui.form.requestSubmit();
    }
  });

  // ------------------------------------------------------------------------------- images

  function clearImages(revoke = true) {
    // Sent images stay shown in their turn; only unsent ones are released.
    if (revoke) for (const image of state.images) URL.revokeObjectURL(image.url);
    state.images = [];
    ui.attachments.replaceChildren();
    ui.image.value = "";
  }

  function renderAttachments() {
    ui.attachments.replaceChildren(
      ...state.images.map((image, index) =>
        el(
          "li",
          {},
          el("img", { src: image.url, alt: "" }),
          el("button", {
            type: "button",
            text: "Remove",
            "aria-label": `Remove ${image.file.name}`,
            onclick: () => {
              URL.revokeObjectURL(image.url);
              state.images.splice(index, 1);
              renderAttachments();
            },
          }),
        ),
      ),
    );
  }

  function base64Of(file) {
    return new Promise((resolve, reject) => {
      const reader = new FileReader();
      reader.onload = () => resolve(String(reader.result).split(",", 2)[1] || "");
      reader.onerror = () => reject(reader.error);
      reader.readAsDataURL(file);
    });
  }

  ui.image.addEventListener("change", async () => {
    for (const file of ui.image.files) {
      if (state.images.length >= MAX_IMAGES) {
        setStatus(`At most ${MAX_IMAGES} images per question.`, true);
        break;
      }
      if (file.size > MAX_IMAGE_BYTES) {
        setStatus(`${file.name} is larger than 20 MB.`, true);
        continue;
      }
      state.images.push({ file, url: URL.createObjectURL(file), base64: await base64Of(file) });
    }
    ui.image.value = "";
    renderAttachments();
  });

  // ------------------------------------------------------------------------------ threads

  function selectThread(id, labels = null) {
    state.thread = id;
    state.labels = labels;
    if (id) history.replaceState(null, "", `#thread=${encodeURIComponent(id)}`);
    else history.replaceState(null, "", location.pathname);
    for (const button of ui.threadList.querySelectorAll("button")) {
      if (button.dataset.thread === id) button.setAttribute("aria-current", "true");
      else button.removeAttribute("aria-current");
    }
  }

  async function loadThreads() {
    try {
      const found = await postJson("/threads/search", {
        metadata: { graph_id: GRAPH },
        limit: THREADS_SHOWN,
        sort_by: "updated_at",
        sort_order: "desc",
        select: ["thread_id", "updated_at", "metadata"],
        extract: { question: "values.messages[0].content" },
      });
      ui.threadList.replaceChildren(
        ...found.map((thread) => {
          const meta = thread.metadata || {};
          const title =
            contentText(thread.extracted?.question) || String(meta.title || "") || "(no question yet)";
          const when = new Date(thread.updated_at).toLocaleString();
          const where = typeof meta.collection === "string" ? ` · ${meta.collection}` : "";
          return el(
            "li",
            {},
            el(
              "button",
              {
                type: "button",
                class: "thread",
                "data-thread": thread.thread_id,
                "aria-current": thread.thread_id === state.thread ? "true" : null,
                title,
                onclick: () => openThread(thread.thread_id),
              },
              el("span", { class: "title", text: title }),
              el("span", { class: "when", text: `${when}${where}` }),
            ),
          );
        }),
      );
    } catch (error) {
      setStatus(`Cannot list the conversations: ${error.message}`, true);
    }
  }

  // A past conversation: one turn per finished run, rebuilt from the thread's checkpoints.
  async function openThread(id) {
    if (state.busy) return;
    selectThread(id);
    ui.log.replaceChildren();
    setStatus("");
    try {
      const thread = await getJson(`/threads/${id}`);
      const labels = await restoreLabels(thread.metadata || {});
      selectThread(id, labels);
      // Its turns' sources are in its own collection (an older thread: the picker's).
      const collection = labels?.collection || ui.collection.value;
      const checkpoints = await postJson(`/threads/${id}/history`, { limit: HISTORY_LIMIT });
      const finished = checkpoints.filter((c) => c.next.length === 0 && c.values?.question);
      for (const checkpoint of finished.reverse()) {
        const values = checkpoint.values;
        const turn = new Turn(values.question, [], collection);
        turn.finish(values, values);
      }
      if (window.matchMedia("(max-width: 720px)").matches) ui.threadsPanel.open = false;
      toEnd();
      ui.question.focus();
    } catch (error) {
      selectThread(null); // gone (a server without its old threads): the next question starts one
      setStatus(`Cannot open the conversation: ${error.message}`, true);
    }
  }

  // The picker and the filters as a thread's metadata has them; its labels, or null for a
  // thread older than them. A collection no longer loaded is said, and kept in the labels:
  // the next question then starts a new conversation rather than mix collections.
  async function restoreLabels(meta) {
    if (typeof meta.collection !== "string") return null;
    const labels = {
      collection: meta.collection,
      tags: Array.isArray(meta.tags) ? meta.tags.map(String) : [],
      folders: Array.isArray(meta.folders) ? meta.folders.map(String) : [],
    };
    const names = [...ui.collection.options].map((option) => option.value);
    if (!names.includes(labels.collection)) {
      setStatus(
        `This conversation asked the collection “${labels.collection}”, which is not loaded now: a new question starts a new conversation.`,
        true,
      );
      return labels;
    }
    if (ui.collection.value !== labels.collection) {
      ui.collection.value = labels.collection;
      sessionStorage.setItem(COLLECTION_KEY, labels.collection);
      describeCollection(state.collections);
      await loadFacets();
    }
    const missing = [
      ...checkFilters(ui.tags, labels.tags).map((t) => `#${t}`),
      ...checkFilters(ui.folders, labels.folders).map((f) => `${f}/`),
    ];
    countFilters();
    if (meta.filters_kept === false) {
      ui.filtersNote.textContent = "This conversation's filters were too many to keep with it: choose them again.";
    } else if (missing.length) {
      ui.filtersNote.textContent = `No longer in this collection, so not applied: ${missing.join(", ")}.`;
    }
    if (labels.tags.length || labels.folders.length) ui.filters.open = true;
    // What its follow-ups will be asked with: the filters that still exist.
    labels.tags = chosen(ui.tags);
    labels.folders = chosen(ui.folders);
    return labels;
  }

  // Ticks exactly the boxes named; the names that have no box.
  function checkFilters(list, names) {
    const boxes = [...list.querySelectorAll("input[type=checkbox]")];
    for (const box of boxes) box.checked = names.includes(box.value);
    return names.filter((name) => !boxes.some((box) => box.value === name));
  }

  function newConversation(why = "") {
    selectThread(null);
    ui.log.replaceChildren();
    clearImages();
    setStatus(why);
  }

  ui.newThread.addEventListener("click", () => {
    if (state.busy) return;
    newConversation();
    ui.question.focus();
  });

  // ------------------------------------------------------------------ collections, filters

  async function loadCollections() {
    const found = await getJson("/rag/collections");
    const rows = found.collections || [];
    state.collections = rows;
    state.vaults = Object.fromEntries(rows.map((row) => [row.name, row.vault || ""]));
    ui.collection.replaceChildren(
      ...rows.map((row) => el("option", { value: row.name, text: row.name })),
    );
    if (!rows.length) {
      setStatus("No collection yet: load your notes with `rag load -f NOTES_DIR -n NAME`.", true);
      return;
    }
    const names = rows.map((row) => row.name);
    const remembered = sessionStorage.getItem(COLLECTION_KEY);
    ui.collection.value = [remembered, found.default].find((n) => names.includes(n)) || names[0];
    describeCollection(rows);
    await loadFacets();
  }

  function describeCollection(rows) {
    const row = rows.find((r) => r.name === ui.collection.value);
    if (!row) return;
    const vault = row.vault ? ` · Obsidian vault “${row.vault}”` : "";
    ui.collectionInfo.textContent = `${row.notes} notes, ${row.chunks} chunks${vault}`;
  }

  function facetBoxes(list, facets, kind) {
    list.replaceChildren(
      ...facets.map((facet) => {
        const name = `${kind === "tag" ? "#" : ""}${facet.name}${kind === "folder" ? "/" : ""}`;
        // A long name is cut at phone width: its tooltip holds it whole.
        return el(
          "label",
          { class: "facet", title: name },
          el("input", { type: "checkbox", name: kind, value: facet.name }),
          ` ${name} `,
          el("span", { class: "muted", text: `(${facet.notes})` }),
        );
      }),
    );
    if (!facets.length) list.append(el("p", { class: "muted", text: `No ${kind}s.` }));
  }

  async function loadFacets() {
    const collection = ui.collection.value;
    ui.filtersNote.textContent = "";
    try {
      const found = await getJson(`/rag/facets?${new URLSearchParams({ collection })}`);
      facetBoxes(ui.tags, found.filterable ? found.tags : [], "tag");
      facetBoxes(ui.folders, found.filterable ? found.folders : [], "folder");
      if (!found.filterable) {
        ui.filtersNote.textContent =
          "This collection was loaded before tags and folders were recorded: load it again to filter.";
      }
    } catch (error) {
      ui.filtersNote.textContent = `Cannot read the filters: ${error.message}`;
    }
    countFilters();
  }

  function countFilters() {
    const count = chosen(ui.tags).length + chosen(ui.folders).length;
    ui.filterCount.textContent = count ? `(${count} on)` : "";
  }

  ui.filters.addEventListener("change", countFilters);

  ui.collection.addEventListener("change", async () => {
    const collection = ui.collection.value;
    sessionStorage.setItem(COLLECTION_KEY, collection);
    // A conversation stays in its collection: its follow-ups are read with its history and
    // its sources are that collection's sections. Another collection is another conversation.
    if (state.thread && state.labels?.collection !== collection) {
      const was = state.labels?.collection;
      newConversation(
        `A new conversation in “${collection}”${was ? `: the one in “${was}” stays under Conversations` : ""}.`,
      );
    }
    const rows = (await getJson("/rag/collections")).collections || [];
    state.collections = rows;
    describeCollection(rows);
    await loadFacets();
  });

  // ---------------------------------------------------------------------------------- start

  async function start() {
    try {
      await loadCollections();
      await loadThreads();
      const match = location.hash.match(/^#thread=(.+)$/);
      if (match) await openThread(decodeURIComponent(match[1]));
    } catch (error) {
      setStatus(`Cannot reach the server: ${error.message}`, true);
    }
    if (window.matchMedia("(max-width: 720px)").matches) ui.threadsPanel.open = false;
    ui.question.focus();
  }

  start();
})();
