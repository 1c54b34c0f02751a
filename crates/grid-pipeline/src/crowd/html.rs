//! The questionnaire: one self-contained HTML file (no server, no network)
//! that a person opens with their worker id and batch, e.g.
//! `questionnaire.html?worker=W17&batch=3`. It shows the batch's tasks one at
//! a time in an order seeded by the worker id — the words in place, hidden
//! words as dots, a button per label and "don't know" — with progress, and at
//! the end downloads the answers as CSV (`worker,batch,task,answer,seconds`,
//! the file `grid crowd import` reads), also shown for copying. Answers are
//! kept in the browser's storage as they are given, so a reload or a closed
//! tab resumes where the person stopped.

use serde_json::json;

use super::study::Study;

pub const FILE: &str = "questionnaire.html";

/// The page for `study`.
pub fn render(study: &Study) -> String {
    let texts: serde_json::Map<String, serde_json::Value> =
        study.tasks.iter().map(|t| (t.id.clone(), json!(t.text))).collect();
    let data = json!({
        "grid": study.grid,
        "seed": study.seed,
        "labels": study.labels,
        "batches": study.batches,
        "texts": texts,
    });
    // `</` would end the script element early.
    let data = data.to_string().replace("</", "<\\/");
    PAGE.replace("{{TITLE}}", &escape(&format!("Which label? ({})", study.grid))).replace("{{DATA}}", &data)
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

const PAGE: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{TITLE}}</title>
<style>
  body { font-family: system-ui, sans-serif; max-width: 46rem; margin: 2rem auto; padding: 0 1rem; line-height: 1.5; }
  #text { font-size: 1.2rem; padding: 1rem; background: #f6f6f6; border-radius: .4rem; word-spacing: .15rem; }
  .answers button { font-size: 1.05rem; margin: .3rem .4rem .3rem 0; padding: .5rem 1.1rem; cursor: pointer; }
  #progress { color: #555; }
  progress { width: 100%; }
  textarea { width: 100%; height: 10rem; font-family: monospace; }
  [hidden] { display: none; }
</style>
</head>
<body>
<h1>Which label fits?</h1>
<section id="start">
  <p>Each task shows some words of a text in their original place; every hidden
  word is a dot (…). Choose the label the text most likely has, or
  “I don't know” when the words do not tell.</p>
  <p><label>Worker id <input id="worker" autocomplete="off"></label></p>
  <p><label>Batch <input id="batch" type="number" min="0"></label></p>
  <p><button id="begin">Start</button> <span id="start-error" role="alert"></span></p>
</section>
<section id="task" hidden>
  <p id="progress"></p>
  <progress id="bar" value="0" max="1"></progress>
  <p id="text"></p>
  <div class="answers" id="answers"></div>
</section>
<section id="done" hidden>
  <p>Thank you. Your answers were downloaded as <code id="filename"></code>;
  if not, <a id="download">download them</a> or copy them from below.</p>
  <textarea id="csv" readonly></textarea>
</section>
<script id="study" type="application/json">{{DATA}}</script>
<script>
"use strict";
const study = JSON.parse(document.getElementById("study").textContent);
const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
$("worker").value = params.get("worker") || "";
$("batch").value = params.get("batch") || "";
$("batch").max = String(study.batches.length - 1);

// FNV-1a, then mulberry32: the same worker sees the same order on any browser.
function hash(text) {
  let h = 2166136261 >>> 0;
  for (const c of new TextEncoder().encode(text)) { h ^= c; h = Math.imul(h, 16777619) >>> 0; }
  return h;
}
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
function shuffled(items, random) {
  const out = items.slice();
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}
function csvField(text) {
  return /[",\n]/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text;
}

let worker = "", batch = 0, order = [], at = 0, shownAt = 0;
let rows = [];
// Progress survives a reload: keyed by the study, the worker and the batch.
const storageKey = () => "grid-crowd:" + study.grid + ":" + study.seed + ":" + worker + ":" + batch;
function save() {
  try { localStorage.setItem(storageKey(), JSON.stringify(rows)); } catch (e) { /* private mode: no resume */ }
}
function restore() {
  try {
    const saved = JSON.parse(localStorage.getItem(storageKey()) || "[]");
    if (Array.isArray(saved) && saved.every((r, i) => Array.isArray(r) && r[2] === order[i])) rows = saved;
  } catch (e) { rows = []; }
  at = rows.length;
}

function show() {
  if (at === order.length) return finish();
  $("progress").textContent = "Task " + (at + 1) + " of " + order.length;
  $("bar").max = order.length;
  $("bar").value = at;
  $("text").textContent = study.texts[order[at]];
  shownAt = performance.now();
}
function answer(value) {
  const seconds = ((performance.now() - shownAt) / 1000).toFixed(1);
  rows.push([worker, String(batch), order[at], value, seconds]);
  at += 1;
  save();
  show();
}
function finish() {
  const csv = "worker,batch,task,answer,seconds\n" + rows.map((r) => r.map(csvField).join(",")).join("\n") + "\n";
  const name = "answers-" + worker.replace(/[^A-Za-z0-9_-]/g, "_") + "-batch" + batch + ".csv";
  const url = URL.createObjectURL(new Blob([csv], { type: "text/csv" }));
  $("task").hidden = true;
  $("done").hidden = false;
  $("csv").value = csv;
  $("filename").textContent = name;
  const link = $("download");
  link.href = url;
  link.download = name;
  link.click();
  document.body.dataset.finished = "yes";
}

for (const [index, label] of study.labels.entries()) {
  const button = document.createElement("button");
  button.textContent = label;
  button.dataset.answer = String(index);
  button.addEventListener("click", () => answer(String(index)));
  $("answers").appendChild(button);
}
const unsure = document.createElement("button");
unsure.textContent = "I don't know";
unsure.dataset.answer = "dont_know";
unsure.addEventListener("click", () => answer("dont_know"));
$("answers").appendChild(unsure);

$("begin").addEventListener("click", () => {
  worker = $("worker").value.trim();
  batch = Number($("batch").value);
  if (!worker) { $("start-error").textContent = "Enter your worker id."; return; }
  if (!Number.isInteger(batch) || batch < 0 || batch >= study.batches.length) {
    $("start-error").textContent = "Enter a batch from 0 to " + (study.batches.length - 1) + ".";
    return;
  }
  order = shuffled(study.batches[batch], rng(hash(worker) ^ study.seed));
  restore();
  $("start").hidden = true;
  $("task").hidden = false;
  show();
});
document.body.dataset.ready = "yes";
</script>
</body>
</html>
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crowd::study::{Task, TaskKind, VERSION};

    #[test]
    fn the_page_carries_every_task_and_cannot_be_broken_by_a_text() {
        let study = Study {
            version: VERSION,
            grid: "g<1>".into(),
            seed: 3,
            ks: vec![5],
            answers_per_task: 1,
            labels: vec!["neg".into(), "pos".into()],
            methods: vec!["m".into()],
            subset: Default::default(),
            tasks: vec![Task {
                id: "t1".into(),
                kind: TaskKind::AttentionCheck,
                text: "a </script> b".into(),
                label: 0,
            }],
            batches: vec![vec!["t1".into()]],
        };
        let page = render(&study);
        assert!(page.contains("<title>Which label? (g&lt;1&gt;)</title>"));
        assert_eq!(page.matches("</script>").count(), 2, "the task's text cannot close a script");
        assert!(page.contains(r#"a <\/script> b"#));
        assert!(page.contains(r#""labels":["neg","pos"]"#));
    }
}
