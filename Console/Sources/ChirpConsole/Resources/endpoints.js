/*
 * Chirp Console: the HTTP tab's Endpoints pane: count, error rate and latency per endpoint, refreshed while the tab is
 * shown. Methods, paths and hosts from the API are put in as text.
 */
import { api } from "./api.js";
import { $, el } from "./dom.js";
import { formatCount } from "./format.js";
import { sourceParams, state } from "./state.js";

const ENDPOINTS_REFRESH_MS = 5000;

/** The pane. hooks: toggle(method, path) when an endpoint is clicked. */
export function createEndpointsPane(hooks) {
  const pane = {
    timer: 0,
    nodes: new Map(),
    generation: 0,

    start() {
      this.stop();
      this.load();
      this.timer = setInterval(() => { if (document.visibilityState === "visible") this.load(); }, ENDPOINTS_REFRESH_MS);
    },

    stop() {
      if (this.timer) { clearInterval(this.timer); this.timer = 0; }
    },

    async load() {
      const gen = ++this.generation;
      let body;
      try {
        body = await api("/api/endpoints", sourceParams());
      } catch (err) {
        return;  // the table shows errors; keep the last list
      }
      if (gen !== this.generation) return;
      this.render(Array.isArray(body.endpoints) ? body.endpoints : []);
    },

    key(e) { return String(e.method) + " " + String(e.host) + " " + String(e.path); },

    render(list) {
      const container = $("endpoints");
      const seen = new Set();
      for (const e of list) {
        if (!e || typeof e !== "object") continue;
        const key = this.key(e);
        seen.add(key);
        let row = this.nodes.get(key);
        if (!row) { row = this.createRow(); this.nodes.set(key, row); }
        this.fillRow(row, e);
        container.appendChild(row);
      }
      for (const [key, row] of this.nodes) if (!seen.has(key)) { row.remove(); this.nodes.delete(key); }
      $("endpoints-count").textContent = list.length ? String(list.length) : "";
    },

    createRow() {
      const row = el("button", "endpoint-row");
      row.type = "button";
      row.setAttribute("role", "listitem");
      const top = row.appendChild(el("div", "endpoint-top"));
      row._method = top.appendChild(el("span", "method"));
      row._path = top.appendChild(el("span", "endpoint-path"));
      row._host = row.appendChild(el("div", "endpoint-host"));
      const stats = row.appendChild(el("div", "endpoint-stats"));
      row._count = stats.appendChild(el("span"));
      row._errors = stats.appendChild(el("span"));
      row._latency = stats.appendChild(el("span"));
      row.addEventListener("click", function () { hooks.toggle(row.dataset.method, row.dataset.path); });
      return row;
    },

    fillRow(row, e) {
      row.dataset.method = String(e.method || "");
      row.dataset.path = String(e.path || "");
      row._method.textContent = String(e.method || "");
      row._path.textContent = String(e.path || "");
      row._host.textContent = String(e.host || "");
      row._count.textContent = formatCount(e.count) + "×";
      const rate = typeof e.errorRate === "number" ? e.errorRate : 0;
      row._errors.textContent = (rate * 100).toFixed(rate > 0 && rate < 0.1 ? 1 : 0) + "% err";
      row._errors.className = rate > 0 ? "bad" : "";
      row._latency.textContent = [e.p50, e.p90, e.p99].map(function (v) {
        return typeof v === "number" ? (v < 10 ? v.toFixed(1) : String(Math.round(v))) : "–";
      }).join("/") + " ms";
      row.title = "p50 / p90 / p99 latency; " + formatCount(e.errors) + " errors of " + formatCount(e.count);
      row.setAttribute("aria-pressed", String(state.method === String(e.method) && state.path === String(e.path)));
    },

    refreshSelection() {
      for (const row of this.nodes.values()) {
        row.setAttribute("aria-pressed", String(state.method === row.dataset.method && state.path === row.dataset.path));
      }
    },
  };
  return pane;
}
