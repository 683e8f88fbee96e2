// onnxtext view: behaviour of the page (pan and zoom, search, side panel, clusters). The graph itself is
// static SVG markup; this script reads the data block #onnxtext-data and never touches the network.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("onnxtext-data").textContent);
  const svg = document.querySelector("#canvas svg");
  const panel = document.getElementById("panel");
  const full = svg.viewBox.baseVal;
  let view = {x: full.x, y: full.y, w: full.width, h: full.height};
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));

  // ---------------------------------------------------------------- pan and zoom (the viewBox)
  function setView(v) { view = v; svg.setAttribute("viewBox", `${v.x} ${v.y} ${v.w} ${v.h}`); }
  function fit() { setView({x: full.x, y: full.y, w: full.width, h: full.height}); }
  function centerOn(el) {
    const b = el.getBBox(), m = el.getCTM(), root = svg.getCTM();
    const p = svg.createSVGPoint(); p.x = b.x + b.width / 2; p.y = b.y + b.height / 2;
    const q = p.matrixTransform(root.inverse().multiply(m));
    const w = Math.min(view.w, Math.max(600, b.width * 4)), h = w * view.h / view.w;
    setView({x: q.x - w / 2, y: q.y - h / 2, w: w, h: h});
  }
  svg.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const r = svg.getBoundingClientRect(), k = ev.deltaY > 0 ? 1.15 : 1 / 1.15;
    const fx = (ev.clientX - r.left) / r.width, fy = (ev.clientY - r.top) / r.height;
    const w = view.w * k, h = view.h * k;
    setView({x: view.x + (view.w - w) * fx, y: view.y + (view.h - h) * fy, w: w, h: h});
  }, {passive: false});
  let drag = null;
  svg.addEventListener("mousedown", (ev) => { drag = {x: ev.clientX, y: ev.clientY, v: view, moved: false}; });
  window.addEventListener("mousemove", (ev) => {
    if (!drag) return;
    const r = svg.getBoundingClientRect(), sx = drag.v.w / r.width, sy = drag.v.h / r.height;
    const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
    setView({x: drag.v.x - dx * sx, y: drag.v.y - dy * sy, w: drag.v.w, h: drag.v.h});
  });
  window.addEventListener("mouseup", () => { setTimeout(() => { drag = null; }, 0); });

  // ---------------------------------------------------------------- clusters
  const clusterEls = {};
  document.querySelectorAll(".onnxtext-graph .cluster").forEach((el) => { clusterEls[el.id] = el; });
  const boxEls = {};
  document.querySelectorAll(".onnxtext-graph .box").forEach((el) => { boxEls[el.id] = el; });
  const linkEls = Array.from(document.querySelectorAll(".onnxtext-graph .link"));
  function isOpen(cid) {  // a cluster's contents show when it and all its ancestors are expanded
    while (cid) {
      const el = clusterEls[cid];
      if (!el || el.classList.contains("collapsed")) return false;
      cid = el.dataset.parent;
    }
    return true;
  }
  function refresh() {
    for (const [cid, el] of Object.entries(clusterEls)) el.style.display = isOpen(el.dataset.parent) ? "" : "none";
    for (const el of Object.values(boxEls)) el.style.display = isOpen(el.dataset.cluster) ? "" : "none";
    for (const el of linkEls) {
      const a = boxEls[el.dataset.src], b = boxEls[el.dataset.dst];
      el.style.display = a && b && a.style.display !== "none" && b.style.display !== "none" ? "" : "none";
    }
  }
  function expand(cid, open) {
    const el = clusterEls[cid];
    if (!el) return false;
    el.classList.toggle("collapsed", !open);
    if (open) { let p = el.dataset.parent; while (p) { clusterEls[p].classList.remove("collapsed"); p = clusterEls[p].dataset.parent; } }
    refresh();
    return true;
  }
  function setAll(open) { for (const el of Object.values(clusterEls)) el.classList.toggle("collapsed", !open); refresh(); }

  // ---------------------------------------------------------------- side panel
  function facts(rows) {
    return '<table class="facts">' + rows.map(([k, v]) => `<tr><td>${esc(k)}</td><td>${esc(v)}</td></tr>`).join("") + "</table>";
  }
  function showModel() {
    panel.innerHTML = `<h2>${esc(data.title || "model")}</h2>` + (data.source ? `<div>${esc(data.source)}</div>` : "") +
      facts(data.info) + "<p>Click a node to see its onnxtext.</p>";
  }
  let selected = null;
  function select(id) {
    const box = data.boxes[id], el = boxEls[id];
    if (!box || !el) return false;
    if (selected) selected.classList.remove("selected");
    selected = el; el.classList.add("selected");
    let h = `<h2>${esc(box.title)}</h2>`;
    if (box.mark) h += `<div class="mark">${esc(box.mark)}</div>`;
    h += `<div><code>${esc(box.path)}</code>` + (box.line ? ` — line ${box.line}` + (data.source ? ` of ${esc(data.source)}` : "") : "") + "</div>";
    if (box.changes) h += '<ul class="changes">' + box.changes.map((c) => `<li>${esc(c)}</li>`).join("") + "</ul>";
    h += `<pre class="node-text">${esc(box.text)}</pre>`;
    for (const cid of box.expands || []) {
      const c = data.clusters[cid];
      if (c) h += `<button class="open" data-cluster="${cid}">show ${esc(c.title)}</button> `;
    }
    for (const [name, type, text] of box.weights || []) {
      h += `<details class="weight"><summary>${esc(name)}: ${esc(type)}</summary><pre>${esc(text)}</pre></details>`;
    }
    panel.innerHTML = h;
    panel.querySelectorAll("button.open").forEach((b) => b.addEventListener("click", () => {
      expand(b.dataset.cluster, true); centerOn(clusterEls[b.dataset.cluster]);
    }));
    return true;
  }
  svg.addEventListener("click", (ev) => {
    if (drag && drag.moved) return;
    const ct = ev.target.closest(".cluster");
    if (ct && ev.target.classList.contains("ctitle")) { expand(ct.id, ct.classList.contains("collapsed")); return; }
    const g = ev.target.closest(".box");
    if (!g) return;
    if (ev.target.classList.contains("expander")) {
      const k = Array.from(g.querySelectorAll(".expander")).indexOf(ev.target);
      const cid = (data.boxes[g.id].expands || [])[k];
      if (cid) expand(cid, clusterEls[cid].classList.contains("collapsed"));
    }
    select(data.boxes[g.id].ref || g.id);  // a ghost stands for its value's producer
  });

  // ---------------------------------------------------------------- search
  const input = document.getElementById("search"), hitsEl = document.getElementById("hits");
  let hits = [], current = -1;
  function search(q) {
    for (const id of hits) boxEls[id].classList.remove("hit");
    q = q.trim().toLowerCase();
    hits = q ? Object.keys(data.boxes).filter((id) => data.boxes[id].kind !== "ghost" &&
        (data.boxes[id].search.includes(q) || data.boxes[id].title.toLowerCase().includes(q))) : [];
    for (const id of hits) boxEls[id].classList.add("hit");
    current = -1;
    hitsEl.textContent = q ? `${hits.length} found` : "";
    return hits.slice();
  }
  function next() {
    if (!hits.length) return null;
    current = (current + 1) % hits.length;
    const id = hits[current], box = data.boxes[id];
    if (boxEls[id].dataset.cluster) expand(boxEls[id].dataset.cluster, true);
    select(id); centerOn(boxEls[id]);
    hitsEl.textContent = `${current + 1} of ${hits.length}`;
    return id;
  }
  input.addEventListener("input", () => search(input.value));
  input.addEventListener("keydown", (ev) => { if (ev.key === "Enter") next(); });
  document.getElementById("fit").addEventListener("click", fit);
  document.getElementById("expand-all").addEventListener("click", () => setAll(true));
  document.getElementById("collapse-all").addEventListener("click", () => setAll(false));

  showModel();
  refresh();
  // for tests and scripts: the same actions as the controls
  window.onnxtextView = {select: select, expand: expand, setAll: setAll, search: search, next: next, fit: fit, ready: true};
})();
