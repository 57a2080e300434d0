// The neardup page: calls the JSON API of `neardup ui` (neardup/ui/app.py), which calls the gRPC server.
// No framework, no build step. Spans from Explain count Unicode code points; a JavaScript string counts UTF-16 code
// units, so spans are converted (codePointOffsets) before a text is cut.
"use strict";

const $ = (id) => document.getElementById(id);
const SPAN_CLASSES = ["shared", "sketch_shared", "boilerplate"];
const THRESHOLD_SOURCES = {
  learned: "learned by `neardup index` from the store's articles",
  set: "set by hand (`neardup configure --threshold`)",
  fixed: "the sketch kind's fixed default",
  pair_model: "chosen for the items store's trained pair model",
};

const state = {
  info: null,
  resultSet: null,        // {mode: "ids" | "documents", ids: [...], documents: [...] | null}
  answer: null,           // the Dedup answer shown
  threshold: null,        // sent with each call: the slider's value once moved (or the URL's); null: the server's
  requests: 0,            // Dedup calls made; only the answer of the latest is shown
  inFlight: false,
  again: false,
  picked: [],             // positions picked for a pair
  titles: new Map(),      // id -> its title from --corpus ("" when it has none)
  infoLoaded: null,       // the first Info answer (a promise; null when it failed)
};

// ---- the API ----

class ApiError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

async function api(method, path, body) {
  let response;
  try {
    response = await fetch(path, body === undefined ? { method } : {
      method, headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
  } catch (error) {
    throw new ApiError("UNREACHABLE", `the page's server (neardup ui) cannot be reached: ${error.message}`);
  }
  let data;
  try {
    data = await response.json();
  } catch (error) {
    throw new ApiError(String(response.status), `${response.status} ${response.statusText}: no JSON answer`);
  }
  if (data && data.error) throw new ApiError(data.error.code, data.error.message);
  if (!response.ok) throw new ApiError(String(response.status), response.statusText);
  return data;
}

function showError(id, error) {
  const element = $(id);
  if (!error) {
    element.hidden = true;
    element.textContent = "";
    return;
  }
  element.textContent = error.code ? `${error.code}: ${error.message}` : error.message;
  element.hidden = false;
}

function element(tag, className, text) {
  const made = document.createElement(tag);
  if (className) made.className = className;
  if (text !== undefined) made.textContent = text;
  return made;
}

// A similarity or a threshold as the page shows it: four decimals at most, trailing zeros dropped (0.5375, 0.5,
// 0.9524): the precision of a learned threshold, the same in the header, the slider and every answer.
const fixed = (value) => String(Number(Number(value).toFixed(4)));
const count = (number, noun, plural = `${noun}s`) => `${number} ${number === 1 ? noun : plural}`;

// ---- views ----

// A view is named by the URL's hash: #results, #store, #similar, #label; #similar?id=ID searches with a stored id.
function showView() {
  const [view, query] = (location.hash || "#results").slice(1).split("?");
  for (const name of ["results", "store", "similar", "label"]) {
    $(`view-${name}`).hidden = name !== view;
    $(`nav-${name}`).classList.toggle("current", name === view);
  }
  // the pair is shown in the view that opened it, under what it was opened from
  if ($("pair").parentElement !== $(`view-${view}`)) $("pair").hidden = true;
  if (view === "store") {
    loadInfo().catch(() => {});
    loadClusters();
  }
  if (view === "label") loadLabel();
  const id = new URLSearchParams(query || "").get("id");
  if (view === "similar" && id !== null) {
    $("similar-id").value = id;
    $("similar-text").value = "";
    findSimilar();
  }
}

// ---- ids: each with its title (--corpus) and a link to its Find similar ----

function docRef(id) {
  const ref = element("span", "doc");
  const link = element("a", "id", id);
  link.href = `#similar?id=${encodeURIComponent(id)}`;
  link.title = `${id}: find the articles similar to it`;
  const title = element("span", "title", state.titles.get(id) || "");
  title.dataset.titleOf = id;
  ref.append(link, title);
  return ref;
}

// Fills the titles of the ids under root from --corpus (asked once per id); root.dataset.titles is "ready" after.
async function fillTitles(root) {
  const info = await state.infoLoaded;
  if (info && info.corpus) {
    const shown = [...root.querySelectorAll("[data-title-of]")];
    const wanted = [...new Set(shown.map((title) => title.dataset.titleOf))].filter((id) => !state.titles.has(id));
    try {
      if (wanted.length) {
        const answer = await api("POST", "/api/titles", { ids: wanted });
        for (const id of wanted) state.titles.set(id, answer.titles[id] || "");
      }
    } catch (error) {
      // the ids are shown without titles; the views say what failed of their own calls
    }
    for (const title of shown) title.textContent = state.titles.get(title.dataset.titleOf) || "";
  }
  root.dataset.titles = "ready";
}

function compareButton(open) {
  const compare = element("button", "explain", "compare");
  compare.type = "button";
  compare.addEventListener("click", open);
  return compare;
}

async function loadInfo() {
  try {
    const info = await api("GET", "/api/info");
    state.info = info;
    showError("store-error", null);
    renderInfo(info);
    return info;
  } catch (error) {
    showError("store-error", error);
    $("server-line").textContent = "server not answering";
    throw error;
  }
}

// The store as its server describes it (Info's description: a store of texts by its shingle unit, K and language;
// an items store by its fields and rules), in the header and the Store view alike.
function renderInfo(info) {
  const config = info.sketch_config;
  const source = info.default_threshold_source;
  const items = config.kind === "items";
  $("server-line").textContent =
    `${info.articles} articles · ${info.description} · default threshold ${fixed(info.default_threshold)}` +
    (source ? ` (${source})` : "");
  const rows = [
    ["Articles", info.articles],
    ["Store", info.store],
    ["Generation", info.generation],
    ["Configuration", info.description],
    ["Sketch kind", config.kind],
    ...(items ? [
      ...config.fields.map((field) => [`Field ${field.name}`, fieldSettings(field)]),
      ["Rules (a pair must match on all fields of one)", config.rules.map((rule) => rule.join(" + ")).join(" · ")],
    ] : [
      ["Shingle unit", config.unit],
      ["K (sketch values kept)", config.kind === "bottomk" ? config.k : "–"],
      ["Shortest word kept", config.min_word_len],
      ["Language", config.lang + (config.lang_identifier ? ` (${config.lang_identifier})` : "")],
      ["Shingle hash", config.hash],
      ["Stop-list (boilerplate shingles)", `${info.stoplist_size}` +
        (config.stoplist_digest ? ` · digest ${config.stoplist_digest}` : "")],
    ]),
    ["Sketcher version", config.sketcher_version],
    ["Texts and records (--corpus)", info.corpus || "none: ids and similarities only (neardup ui --corpus JSONL)"],
    ["Default threshold", `${fixed(info.default_threshold)}` +
      (source ? ` — ${THRESHOLD_SOURCES[source] || source}` : "")],
    ["Default metric", info.default_metric],
    ["Default grouping", info.default_grouping],
    ["Most results per request", info.max_result_set],
    ["Searchable (Find similar)", info.indexed ? "yes" : "no: the store keeps no postings"],
    ["Pair model", info.pair_model || "–"],
    ["Server version", `${info.version} · store format ${info.format_version}`],
  ];
  const table = $("info");
  table.replaceChildren();
  for (const [name, value] of rows) {
    const row = element("tr");
    row.append(element("th", "", name), element("td", "", String(value)));
    table.append(row);
  }
  table.dataset.kind = config.kind;
  fillSelect($("metric"), info.metrics, info.default_metric);
  fillSelect($("grouping"), info.groupings, info.default_grouping);
  if (state.threshold === null) setSlider(info.default_threshold);
}

// An items field's settings, each as its kind uses it. Its weight is the description's (as the server weighs it:
// learned weights replace the schema's, which sketch_config holds).
function fieldSettings(field) {
  return field.kind === "text" ? `text, ${field.unit} shingles, k=${field.k}, ${field.metric}` :
    field.kind === "exact" ? `exact, normalised as ${field.normalize}` : `location, geohash precision ${field.precision}`;
}

function fillSelect(select, names, fallback) {
  const chosen = select.value;
  select.replaceChildren(element("option", "", `server default (${fallback})`));
  select.firstChild.value = "";
  for (const name of names || []) {
    const option = element("option", "", name);
    option.value = name;
    select.append(option);
  }
  select.value = chosen;
}

function setSlider(value) {
  $("threshold").value = String(value);
  $("threshold-value").textContent = Number.isFinite(Number(value)) ? fixed(value) : String(value);
}

// ---- the result set ----

// A JSON Lines line the browser's parser refused: what is wrong with it is said in the command line's words,
// which the page's server gives (/api/json-line), so the page and `neardup index` say the same.
class BadLine extends Error {
  constructor(number, line) {
    super(`line ${number}: not JSON`);
    this.number = number;
    this.line = line;
  }
}

async function described(error) {
  if (!(error instanceof BadLine)) return error;
  try {
    const { problem } = await api("POST", "/api/json-line", { line: error.line });
    return new ApiError("BAD_INPUT", `line ${error.number}: ${problem || "not JSON"}`);
  } catch (unreachable) {
    return unreachable;
  }
}

function parseResultSet(text) {
  const lines = text.split(/\r?\n/).filter((line) => line.trim());
  if (lines.length && lines[0].trim().startsWith("{")) {
    const documents = lines.map((line, index) => {
      let record;
      try {
        record = JSON.parse(line);
      } catch (error) {
        throw new BadLine(index + 1, line);
      }
      if (!record || typeof record !== "object" || Array.isArray(record) || typeof record.id !== "string") {
        throw new ApiError("BAD_INPUT", `line ${index + 1}: a JSON object with a string "id" is expected`);
      }
      if (record.text !== undefined && typeof record.text !== "string") {
        throw new ApiError("BAD_INPUT", `line ${index + 1}: "text" must be a string`);
      }
      const doc = { id: record.id };
      if (typeof record.text === "string") doc.text = record.text;
      if (typeof record.lang === "string") doc.lang = record.lang;
      return doc;
    });
    return { mode: "documents", ids: documents.map((doc) => doc.id), documents };
  }
  const ids = text.split(/[\n,]/).map((id) => id.trim()).filter((id) => id);
  return { mode: "ids", ids, documents: null };
}

function parameters() {
  const chosen = {};
  if (state.threshold !== null) chosen.threshold = state.threshold;
  if ($("metric").value) chosen.metric = $("metric").value;
  return chosen;
}

async function dedup() {
  const resultSet = state.resultSet;
  if (!resultSet) return;
  const request = ++state.requests;
  const results = $("results");
  results.dataset.state = "loading";
  const body = resultSet.mode === "ids" ? { ids: resultSet.ids } : { documents: resultSet.documents };
  Object.assign(body, parameters());
  if ($("grouping").value) body.grouping = $("grouping").value;
  try {
    const answer = await api("POST", "/api/dedup", body);
    if (request !== state.requests) return;
    showError("results-error", null);
    state.answer = answer;
    renderResults(answer);
    results.dataset.threshold = String(answer.threshold);
    results.dataset.state = "ready";
  } catch (error) {
    if (request !== state.requests) return;
    state.answer = null;
    results.replaceChildren();
    $("summary").textContent = "";
    showError("results-error", error);
    results.dataset.state = "error";
  }
  updateShareLink();
}

// Regroups at the slider's value: one Dedup at a time, and once more when the slider moved meanwhile, so the page
// always ends with the answer for where the slider stopped.
async function regroup() {
  if (state.inFlight) {
    state.again = true;
    return;
  }
  state.inFlight = true;
  try {
    await dedup();
  } finally {
    state.inFlight = false;
    if (state.again) {
      state.again = false;
      regroup();
    }
  }
}

function renderResults(answer) {
  const list = $("results");
  list.replaceChildren();
  const missing = new Set(answer.missing_positions);
  const items = [];
  let duplicates = 0;
  answer.ids.forEach((id, position) => {
    const of = answer.duplicate_of[position];
    const item = element("li", of < 0 ? "result kept" : "result duplicate");
    item.dataset.position = String(position);
    item.dataset.id = id;
    const row = element("div", "row");
    const pick = element("input", "pick");
    pick.type = "checkbox";
    pick.title = "pick two results to compare them";
    pick.addEventListener("change", () => picked(position, pick.checked));
    row.append(pick, element("span", "rank", `${position + 1}.`), docRef(id));
    if (missing.has(position)) row.append(element("span", "badge missing", "not stored"));
    if (of >= 0) {
      duplicates += 1;
      item.dataset.duplicateOf = String(of);
      item.dataset.similarity = String(answer.similarity[position]);
      row.append(element("span", "similarity", `≈ ${fixed(answer.similarity[position])}`),
        element("span", "of", `duplicates ${answer.ids[of]}`), compareButton(() => openPair(of, position)));
    }
    item.append(row);
    items[position] = item;
    if (of < 0) {
      item.append(element("ol", "duplicates"));
      list.append(item);
    }
  });
  answer.ids.forEach((_, position) => {
    const of = answer.duplicate_of[position];
    if (of >= 0) items[of].querySelector("ol.duplicates").append(items[position]);
  });
  const kept = answer.ids.length - duplicates;
  $("summary").textContent =
    `${count(answer.ids.length, "result")}: ${kept} kept, ${count(duplicates, "duplicate")} in ` +
    `${count(answer.groups.length, "group")}` + (missing.size ? `, ${missing.size} not stored (kept)` : "") +
    ` · threshold ${fixed(answer.threshold)}, ${answer.metric}, ${answer.grouping}` +
    (answer.cached ? " · from the session cache" : "");
  state.picked = [];
  fillTitles(list);
}

function updateShareLink() {
  const link = $("share");
  const resultSet = state.resultSet;
  if (!resultSet || resultSet.mode !== "ids" || !resultSet.ids.length) {
    link.hidden = true;
    return;
  }
  const query = new URLSearchParams({ ids: resultSet.ids.join(",") });
  if (state.threshold !== null) query.set("threshold", String(state.threshold));
  link.href = `/?${query}`;
  link.hidden = false;
  history.replaceState(null, "", `/?${query}${location.hash}`);
}

function picked(position, checked) {
  state.picked = state.picked.filter((p) => p !== position);
  if (checked) state.picked.push(position);
  if (state.picked.length === 2) {
    const [first, second] = [...state.picked].sort((x, y) => x - y);
    for (const box of document.querySelectorAll("#results input.pick")) box.checked = false;
    state.picked = [];
    openPair(first, second);
  }
}

// ---- a pair ----

function documentAt(position) {
  const resultSet = state.resultSet;
  if (resultSet.mode === "documents") return resultSet.documents[position];
  return { id: resultSet.ids[position] };
}

async function openPair(first, second) {
  await explain(documentAt(first), documentAt(second), "results");
}

// Explains a and b in the pair view, shown at the end of the view it was opened from.
async function explain(a, b, view) {
  const pair = $("pair");
  $(`view-${view}`).append(pair);
  pair.hidden = false;
  pair.dataset.state = "loading";
  try {
    const answer = await api("POST", "/api/explain", { a, b, ...parameters() });
    showError("pair-error", null);
    renderPair(answer, a, b);
    pair.dataset.state = "ready";
  } catch (error) {
    showError("pair-error", error);
    for (const id of ["pair-summary", "pair-note"]) $(id).textContent = "";
    $("pair-counts").replaceChildren();
    $("pair-comparison").replaceChildren();
    pair.dataset.state = "error";
  }
  pair.scrollIntoView({ block: "start" });
}

function renderPair(answer, a, b) {
  const verdict = answer.duplicate ? "near-duplicates" : "not near-duplicates";
  $("pair-summary").textContent =
    `similarity ${fixed(answer.similarity)} (${answer.metric}): ${verdict} at threshold ${fixed(answer.threshold)}`;
  $("pair-summary").className = answer.duplicate ? "duplicate" : "distinct";
  const table = $("pair-counts");
  table.replaceChildren();
  const corpus = state.info && state.info.corpus;
  // the server says what it could not answer (a missing text too); the page adds only what to do about it
  const notes = [];
  if (answer.note) notes.push(`Server: ${answer.note}.`);
  const items = answer.metric === "fields";
  $("pair").dataset.kind = items ? "fields" : "texts";
  if (items) {  // an items pair: its fields side by side, as the Label pairs view shows one
    showFields("pair-comparison", a.id, b.id, answer.fields);
    if (!corpus) {
      notes.push("Start the page with --corpus JSONL (the records indexed into the store) to see their values.");
    } else {
      const missing = ["a", "b"].filter((side) => !answer.found[side]).map((side) => answer[side].id);
      if (missing.length) notes.push(`Not in ${corpus}: ${missing.join(", ")}.`);
    }
  } else {
    renderCounts(table, answer, a, b);
    const texts = answer.texts || {};
    if (texts.a == null || texts.b == null) {
      notes.push("Paste JSON Lines documents with their texts to see the shared passages" +
        (corpus ? "." : ", or start the page with --corpus JSONL (the texts indexed into the store)."));
    }
    showTexts("pair-comparison", {
      a: { id: a.id || "(no id)", text: texts.a ?? null, explained: answer.a, missing: "text not stored" },
      b: { id: b.id || "(no id)", text: texts.b ?? null, explained: answer.b, missing: "text not stored" },
    });
  }
  $("pair-note").textContent = notes.join(" ");
  $("pair-note").hidden = !notes.length;
}

function renderCounts(table, answer, a, b) {
  const counts = [
    ["", a.id || "a", b.id || "b"],
    ["shingles", answer.a.has_text ? answer.a.shingles : "–", answer.b.has_text ? answer.b.shingles : "–"],
    ["of which boilerplate", answer.a.has_text ? answer.a.stoplisted_shingles : "–",
      answer.b.has_text ? answer.b.stoplisted_shingles : "–"],
    ["sketch values", answer.a.sketch_values, answer.b.sketch_values],
    ["compared", answer.a.compared_values, answer.b.compared_values],
  ];
  for (const [index, cells] of counts.entries()) {
    const row = element("tr");
    cells.forEach((cell, column) => row.append(element(index === 0 || column === 0 ? "th" : "td", "", String(cell))));
    table.append(row);
  }
  const shared = element("tr");
  // shingles are counted from texts: without both, their number is unknown, not 0
  const sharedShingles = answer.a.has_text && answer.b.has_text ? answer.shared_shingles : "–";
  shared.append(element("th", "", "shared"), element("td", "wide",
    `${sharedShingles} shingles · ${answer.shared_sketch_values} sketch values`));
  shared.lastChild.colSpan = 2;
  table.append(shared);
}

// ---- a pair side by side: one piece (index.html's comparison-template) for the pair view and the label view ----

function comparison(id) {
  const box = $(id);
  if (!box.firstElementChild) box.append($("comparison-template").content.cloneNode(true));
  return box;
}

// An items pair field by field: rows [{name, compared, similarity (null: not compared), weight?, a, b (values)}].
function showFields(id, a, b, rows) {
  const box = comparison(id);
  box.dataset.kind = "fields";
  box.querySelector(".texts").hidden = true;
  const table = box.querySelector("table.fields");
  table.hidden = false;
  table.querySelector("th.side-a").textContent = a;
  table.querySelector("th.side-b").textContent = b;
  const weighed = rows.some((field) => field.weight !== null && field.weight !== undefined);
  table.querySelector("th.weight").hidden = !weighed;
  const body = table.tBodies[0];
  body.replaceChildren();
  for (const field of rows) {
    const row = element("tr", field.compared ? "compared" : "not-compared");
    row.dataset.field = field.name;
    row.append(element("th", "", field.name), element("td", "value", shownValue(field.a)),
      element("td", "value", shownValue(field.b)),
      element("td", "similarity", field.similarity === null ? "—" : fixed(field.similarity)));
    if (weighed) row.append(element("td", "weight", field.weight === null ? "—" : fixed(field.weight)));
    if (!field.compared) row.title = "not a field of the store's schema: not compared";
    else if (field.similarity === null) row.title = "not compared: a record lacks the field, or no rule matched";
    body.append(row);
  }
}

// A text pair: per side {id, text (null: not there), explained (Explain's spans) or null, missing (what to say)}.
function showTexts(id, sides) {
  const box = comparison(id);
  box.dataset.kind = "texts";
  box.querySelector("table.fields").hidden = true;
  box.querySelector(".texts").hidden = false;
  for (const side of ["a", "b"]) {
    const column = box.querySelector(`article.side-${side}`);
    const { id: docId, text, explained, missing } = sides[side];
    column.querySelector("h3").textContent = docId;
    column.querySelector("h3").title = docId;
    const container = column.querySelector(".text");
    if (text === null || text === undefined) {
      container.replaceChildren(element("p", "note", missing));
    } else if (explained && explained.has_text !== false) {
      highlight(container, text, explained);
    } else {
      container.replaceChildren(document.createTextNode(text));
    }
  }
}

// offsets[i] is where code point i starts, in UTF-16 code units; offsets[length in code points] is text.length.
function codePointOffsets(text) {
  const offsets = [0];
  let units = 0;
  for (const character of text) {
    units += character.length;
    offsets.push(units);
  }
  return offsets;
}

// The text, cut where any span starts or ends; each piece inside spans is a <mark> with the classes of the lists
// holding it (shared, sketch_shared, boilerplate), the rest plain text.
function highlight(container, text, explained) {
  const offsets = codePointOffsets(text);
  const at = (codePoint) => offsets[Math.min(codePoint, offsets.length - 1)];
  const lists = SPAN_CLASSES.map((name) => explained[name].map(([start, end]) => [at(start), at(end)]));
  const cuts = new Set([0, text.length]);
  for (const spans of lists) for (const [start, end] of spans) cuts.add(start).add(end);
  const points = [...cuts].sort((x, y) => x - y);
  const next = lists.map(() => 0);
  container.replaceChildren();
  for (let i = 0; i + 1 < points.length; i++) {
    const [from, to] = [points[i], points[i + 1]];
    const names = [];
    lists.forEach((spans, list) => {
      while (next[list] < spans.length && spans[next[list]][1] <= from) next[list] += 1;
      if (next[list] < spans.length && spans[next[list]][0] <= from) names.push(SPAN_CLASSES[list]);
    });
    const piece = text.slice(from, to);
    if (names.length) {
      container.append(element("mark", names.join(" "), piece));
    } else {
      container.append(document.createTextNode(piece));
    }
  }
}

// ---- the store's clusters (neardup ui --store) ----

const TOP_CLUSTERS = 20;

function clusterItem(cluster) {
  const item = element("li", "cluster");
  item.dataset.cluster = cluster.cluster;
  item.dataset.size = cluster.size;
  const head = element("div", "row");
  head.append(element("span", "badge", `cluster ${cluster.cluster}`), element("span", "size",
    count(cluster.size, "article")));
  const members = element("ul", "members");
  const [first] = cluster.members;
  for (const id of cluster.members) {
    const member = element("li", "member");
    member.dataset.id = id;
    member.append(docRef(id));
    // compared with the cluster's first member listed
    if (id !== first) member.append(compareButton(() => explain({ id: first }, { id }, "store")));
    members.append(member);
  }
  if (cluster.more) members.append(element("li", "more", `… and ${cluster.more} more`));
  item.append(head, members);
  return item;
}

async function loadClusters() {
  const section = $("clusters");
  section.dataset.state = "loading";
  try {
    const answer = await api("GET", `/api/clusters?top=${TOP_CLUSTERS}`);
    showError("clusters-error", null);
    const list = $("clusters-list");
    list.replaceChildren();
    $("cluster-form").hidden = !answer.clustered;
    if (answer.store === null) {
      section.dataset.kind = "no-store";
      $("clusters-note").textContent = "Clusters are shown when the page is started with the server's store: " +
        "neardup ui --store LOCATION.";
    } else if (!answer.clustered) {
      section.dataset.kind = "not-clustered";
      $("clusters-note").textContent = `The store ${answer.store} is not clustered: ` +
        `run neardup cluster --store ${answer.store} to give its articles cluster ids.`;
    } else {
      section.dataset.kind = "clustered";
      const how = answer.clustering || {};
      $("clusters-note").textContent =
        `${count(answer.articles, "article")} in ${count(answer.clusters, "cluster")} ` +
        `(${answer.singletons} of one article; ${how.method || "?"} linkage at ${how.threshold} ${how.metric || ""})` +
        ` · the largest ${Math.min(TOP_CLUSTERS, answer.clusters)}, largest first:`;
      for (const cluster of answer.largest) list.append(clusterItem(cluster));
    }
    await fillTitles(section);
    section.dataset.generation = answer.generation ?? "";
    section.dataset.state = "ready";
  } catch (error) {
    showError("clusters-error", error);
    section.dataset.state = "error";
  }
}

async function findCluster() {
  const found = $("cluster-found");
  const id = $("cluster-id").value.trim();
  found.dataset.state = "loading";
  found.replaceChildren();
  try {
    if (!id) throw new ApiError("BAD_INPUT", "give a stored id");
    const answer = await api("GET", `/api/clusters?id=${encodeURIComponent(id)}`);
    showError("cluster-error", null);
    found.dataset.id = answer.id;
    found.dataset.cluster = answer.cluster;
    const line = element("p", "found");
    if (!answer.stored) {
      found.dataset.kind = "not-stored";
      line.append(element("span", "id", answer.id), " is not stored");
      found.append(line);
    } else if (answer.cluster < 0) {
      found.dataset.kind = "not-clustered";
      line.append(element("span", "id", answer.id), " is not clustered");
      found.append(line);
    } else {
      found.dataset.kind = "clustered";
      line.append(element("span", "id", answer.id), ` is in cluster ${answer.cluster}:`);
      const list = element("ol", "found-cluster");
      list.append(clusterItem(answer));
      found.append(line, list);
      await fillTitles(found);
    }
    found.dataset.state = "ready";
  } catch (error) {
    showError("cluster-error", error);
    found.dataset.state = "error";
  }
}

// ---- find similar ----

async function findSimilar() {
  const id = $("similar-id").value.trim();
  const text = $("similar-text").value;
  const body = id ? { id } : { text };
  const topK = Number($("similar-top-k").value);
  if (topK) body.top_k = topK;
  const threshold = $("similar-threshold").value;
  if (threshold !== "") body.threshold = Number(threshold);
  const list = $("matches");
  list.dataset.state = "loading";
  try {
    if (!id && !text.trim()) throw new ApiError("BAD_INPUT", "give a stored id or a text to search with");
    const answer = await api("POST", "/api/similar", body);
    showError("similar-error", null);
    list.replaceChildren();
    for (const match of answer.matches) {
      const item = element("li", "match");
      item.dataset.id = match.id;
      item.append(docRef(match.id), element("span", "similarity", `≈ ${fixed(match.similarity)}`));
      if (match.cluster >= 0) item.append(element("span", "badge", `cluster ${match.cluster}`));
      // the pair opens here, under the search it came from
      item.append(compareButton(() => explain(id ? { id } : { id: "query", text }, { id: match.id }, "similar")));
      list.append(item);
    }
    $("similar-summary").textContent =
      `${count(answer.matches.length, "match", "matches")} at threshold ${fixed(answer.threshold)} (${answer.metric}), best first` +
      (answer.exact ? "" : " · not exact: a match may be missing (see the server's documentation)");
    if ($("pair").parentElement === $("view-similar")) $("pair").hidden = true;  // a new search: no old pair
    await fillTitles(list);
    list.dataset.state = "ready";
  } catch (error) {
    list.replaceChildren();
    $("similar-summary").textContent = "";
    showError("similar-error", error);
    list.dataset.state = "error";
  }
}

// ---- labelling pairs (neardup ui --store S --labels PAIRS): neardup label's session ----

const REASONS = {
  uncertain: "the one the current scorer is least sure of",
  coverage: "from the band of rule similarity the least labelled for its number of candidates",
};
const ANSWERS = { true: "duplicate", false: "not a duplicate", null: "unsure" };
const KEYS = { y: true, n: false, u: null };
const labelling = { busy: false, view: null };

function shownValue(value) {
  if (value === null || value === undefined) return "—";
  if (typeof value === "string") return value;
  if (typeof value === "object" && !Array.isArray(value) && "lat" in value && "lon" in value) {
    return `${value.lat}, ${value.lon}`;
  }
  return JSON.stringify(value);
}

function setLabelButtons() {
  const view = labelling.view;
  const proposal = view ? view.proposal : null;
  for (const id of ["label-yes", "label-no", "label-unsure"]) {
    $(id).hidden = !proposal;
    $(id).disabled = labelling.busy || !proposal;
  }
  $("label-undo").hidden = !view;
  $("label-undo").disabled = labelling.busy || !view || !view.last;
}

function renderLabel(view) {
  labelling.view = view;
  const box = $("labelling");
  const { counts, proposal } = view;
  box.dataset.answered = String(counts.answered);
  box.dataset.kind = proposal ? "pair" : counts.pool ? "done" : "no-pairs";
  box.dataset.a = proposal ? proposal.a : "";
  box.dataset.b = proposal ? proposal.b : "";
  $("label-counts").textContent =
    `${counts.answered} answered of ${count(counts.pool, "sampled candidate pair")}: ` +
    `${count(counts.duplicates, "duplicate")}, ${count(counts.others, "other")}, ${counts.unsure} unsure`;
  const next = `Next: ${view.next}`;
  $("label-file").textContent = `Each answer is appended to ${view.pairs} at once, and reloading the page goes on ` +
    `where it stopped. ${next}.`;
  $("label-last").textContent = view.last ?
    `last answer: ${view.last.a} / ${view.last.b}: ${ANSWERS[view.last.duplicate]}` : "";
  const notes = [];
  $("label-pair").hidden = !proposal;
  if (!proposal) {
    notes.push(counts.pool ? `Every one of the ${count(counts.pool, "sampled candidate pair")} is answered. ${next}.` :
      "The store has no candidate pairs to label: no two of its articles share a sketch value (a store of " +
      "texts) or a super token (an items store).");
  } else {
    const texts = proposal.texts !== null && proposal.texts !== undefined;
    const score = texts ? `${proposal.metric} similarity` : "rule similarity";
    $("label-why").textContent = `pair ${counts.answered + 1} · ${score} ${fixed(proposal.score)} · ` +
      `${proposal.reason}: ${REASONS[proposal.reason] || "proposed"} (certainty ${fixed(proposal.certainty)}; ` +
      "0 is a coin toss)";
    if (texts) {
      const sides = {};
      for (const side of ["a", "b"]) {
        sides[side] = { id: proposal[side], text: proposal.texts[side],
          explained: proposal.explain ? proposal.explain[side] : null, missing: "text not in --corpus" };
      }
      showTexts("label-comparison", sides);
    } else {
      showFields("label-comparison", proposal.a, proposal.b, proposal.fields);
    }
    if (view.corpus === null) {
      notes.push(texts ? "Start the page with --corpus JSONL (the texts indexed into the store) to see the texts " +
        "and the passages they share." :
        "Start the page with --corpus JSONL (the items indexed into the store) to see the records' values.");
    } else {
      const missing = ["a", "b"].filter((side) => !proposal.found[side]).map((side) => proposal[side]);
      if (missing.length) notes.push(`Not in ${view.corpus}: ${missing.join(", ")}.`);
    }
  }
  $("label-note").textContent = notes.join(" ");
}

function labelUnavailable() {
  labelling.view = null;
  const box = $("labelling");
  box.dataset.kind = "unavailable";
  for (const name of ["answered", "a", "b"]) delete box.dataset[name];
  for (const id of ["label-counts", "label-note", "label-last", "label-file"]) $(id).textContent = "";
  $("label-pair").hidden = true;
}

async function labelCall(method, path, body) {
  const box = $("labelling");
  labelling.busy = true;
  setLabelButtons();
  box.dataset.state = "loading";
  try {
    renderLabel(await api(method, path, body));
    showError("label-error", null);
    box.dataset.state = "ready";
  } catch (error) {
    showError("label-error", error);
    if (error.code === "ABORTED") {  // answered meanwhile in another window: show the pair proposed now
      try {
        renderLabel(await api("GET", "/api/label"));
      } catch (again) {
        showError("label-error", again);
      }
    } else if (error.code === "FAILED_PRECONDITION") {
      labelUnavailable();
    }
    box.dataset.state = "error";
  } finally {
    labelling.busy = false;
    setLabelButtons();
  }
}

function loadLabel() {
  if (!labelling.busy) labelCall("GET", "/api/label");
}

function answerLabel(duplicate) {
  const proposal = labelling.view ? labelling.view.proposal : null;
  if (labelling.busy || !proposal) return;
  labelCall("POST", "/api/label", { a: proposal.a, b: proposal.b, duplicate });
}

function undoLabel() {
  if (labelling.busy || !labelling.view || !labelling.view.last) return;
  labelCall("POST", "/api/label/undo", {});
}

function labelKey(event) {
  if ($("view-label").hidden || event.repeat || event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.target.closest && event.target.closest("input, textarea, select")) return;
  const key = event.key.toLowerCase();
  if (key in KEYS) {
    event.preventDefault();
    answerLabel(KEYS[key]);
  } else if (key === "b") {
    event.preventDefault();
    undoLabel();
  }
}

// ---- start ----

function start() {
  $("dedup-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      state.resultSet = parseResultSet($("input").value);
    } catch (error) {
      state.resultSet = null;
      showError("results-error", await described(error));
      return;
    }
    $("pair").hidden = true;
    regroup();
  });
  $("threshold").addEventListener("input", () => {
    state.threshold = Number($("threshold").value);
    $("threshold-value").textContent = fixed(state.threshold);
    regroup();
  });
  for (const id of ["metric", "grouping"]) $(id).addEventListener("change", () => regroup());
  $("pair-close").addEventListener("click", () => { $("pair").hidden = true; });
  $("similar-form").addEventListener("submit", (event) => {
    event.preventDefault();
    findSimilar();
  });
  $("cluster-form").addEventListener("submit", (event) => {
    event.preventDefault();
    findCluster();
  });
  for (const id of ["label-yes", "label-no", "label-unsure"]) {
    $(id).addEventListener("click", () => answerLabel(JSON.parse($(id).dataset.answer)));
  }
  $("label-undo").addEventListener("click", undoLabel);
  document.addEventListener("keydown", labelKey);
  setLabelButtons();
  window.addEventListener("hashchange", showView);
  state.infoLoaded = loadInfo().catch(() => null);
  showView();

  const query = new URLSearchParams(location.search);
  const threshold = query.get("threshold");
  if (threshold !== null) {  // sent as given: a bad one is the server's to refuse, with its message
    state.threshold = threshold.trim() !== "" && Number.isFinite(Number(threshold)) ? Number(threshold) : threshold;
    setSlider(threshold);
  }
  const info = state.infoLoaded;
  const ids = query.get("ids");
  if (ids !== null) {
    $("input").value = ids.split(",").map((id) => id.trim()).filter((id) => id).join("\n");
    state.resultSet = parseResultSet($("input").value);
    info.then(() => regroup());
  }
}

start();
