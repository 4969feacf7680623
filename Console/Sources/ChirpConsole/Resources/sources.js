/*
 * Chirp Console: the Sources pane (every app run the console has heard from, live or not) and the app select of the
 * Logs filters. Names, hosts, fingerprints and counts from the API are put in as text.
 */
import { api } from "./api.js";
import { $, el } from "./dom.js";
import { formatCount, shortFingerprint, trustText } from "./format.js";
import { state } from "./state.js";

/** The pane. hooks: choose(app, host, pid) when a source is clicked (all "" to show every source). */
export function createSourcesPane(hooks) {
  const pane = {
    list: [],
    nodes: new Map(),  // source id -> row element
    appsKey: "",

    async load() {
      try {
        const body = await api("/api/sources");
        this.set(Array.isArray(body.sources) ? body.sources : []);
      } catch (err) {
        // The feeds show the error; the list stays as it was.
      }
    },

    updateFromEvent(data) {
      try {
        const list = JSON.parse(data).sources;
        if (Array.isArray(list)) this.set(list);
      } catch (_) { /* ignore a bad event */ }
    },

    set(list) {
      this.list = list.filter(function (s) { return s && typeof s === "object"; });
      this.render();
      this.fillAppSelect();
    },

    isSelected(s) {
      return state.app !== "" && state.host !== "" && state.app === String(s.app) &&
        state.host === String(s.host) && state.pid === String(s.pid);
    },

    render() {
      const container = $("sources");
      const seen = new Set();
      const sorted = this.list.slice().sort(function (a, b) {
        return (b.live ? 1 : 0) - (a.live ? 1 : 0) || String(a.app).localeCompare(String(b.app));
      });
      for (const s of sorted) {
        const key = String(s.id);
        seen.add(key);
        let row = this.nodes.get(key);
        if (!row) { row = this.createRow(); this.nodes.set(key, row); }
        this.fillRow(row, s);
        container.appendChild(row);  // (re)appends in order
      }
      for (const [key, row] of this.nodes) if (!seen.has(key)) { row.remove(); this.nodes.delete(key); }
      $("sources-count").textContent = this.list.length ? String(this.list.length) : "";
      $("source-all").setAttribute("aria-pressed", String(!state.app && !state.host && !state.pid));
    },

    createRow() {
      const row = el("button", "source-row");
      row.type = "button";
      row.setAttribute("role", "listitem");
      const top = row.appendChild(el("div", "source-top"));
      row._dot = top.appendChild(el("span", "source-dot"));
      row._app = top.appendChild(el("span", "source-app"));
      row._state = top.appendChild(el("span", "source-state"));
      row._host = row.appendChild(el("div", "source-host"));
      const device = row.appendChild(el("div", "source-device"));
      row._device = device;
      row._fingerprint = device.appendChild(el("span", "source-fingerprint"));
      row._trust = device.appendChild(el("span", "source-trust"));
      const counts = row.appendChild(el("div", "source-counts"));
      row._records = counts.appendChild(el("span", "source-records"));
      row._lost = counts.appendChild(el("span", "source-lost"));
      row.addEventListener("click", () => this.toggle(row._source));
      return row;
    },

    fillRow(row, s) {
      row._source = s;
      row.dataset.app = String(s.app || "");
      row.dataset.host = String(s.host || "");
      row.dataset.pid = String(s.pid === undefined || s.pid === null ? "" : s.pid);
      row._dot.className = "source-dot " + (s.live ? "live" : "lost");
      row._app.textContent = String(s.app || "?");
      row._state.textContent = s.live ? "live" : "offline";
      row._host.textContent = String(s.host || "") + " · pid " + String(s.pid === undefined ? "?" : s.pid);
      row._records.textContent = formatCount(s.records) + " rec";
      row._lost.textContent = s.lost ? formatCount(s.lost) + " lost" : "";
      // The device identity, when the source uses one: its short fingerprint, the full one in the titles.
      const fingerprint = typeof s.fingerprint === "string" ? s.fingerprint : "";
      const trust = fingerprint ? trustText(s.trusted) : "";
      row._device.hidden = !fingerprint;
      row._fingerprint.textContent = shortFingerprint(fingerprint);
      row._device.title = fingerprint ? fingerprint + (trust ? " (" + trust + ")" : "") : "";
      row._trust.textContent = trust;
      row._trust.className = "source-trust" + (trust ? (s.trusted ? " trusted" : " untrusted") : "");
      row.title = String(s.app || "") + " on " + String(s.host || "") + ", pid " + String(s.pid) +
        (fingerprint ? "\ndevice " + fingerprint + (trust ? ", " + trust : "") : "") +
        (s.lastSeen ? "\nlast seen " + String(s.lastSeen) : "");
      row.setAttribute("aria-pressed", String(this.isSelected(s)));
    },

    toggle(s) {
      if (!s) return;
      if (this.isSelected(s)) hooks.choose("", "", "");
      else hooks.choose(String(s.app || ""), String(s.host || ""), String(s.pid === undefined || s.pid === null ? "" : s.pid));
    },

    /** The app select lists every app once; rebuilt only when that set changes. */
    fillAppSelect() {
      const apps = Array.from(new Set(this.list.map(function (s) { return String(s.app || ""); }).filter(Boolean))).sort();
      if (state.app && apps.indexOf(state.app) < 0) apps.push(state.app);
      const key = apps.join("\u0000");
      const select = $("filter-app");
      if (key !== this.appsKey) {
        this.appsKey = key;
        while (select.options.length > 1) select.remove(1);
        for (const app of apps) {
          const option = el("option", null, app);
          option.value = app;
          select.appendChild(option);
        }
      }
      select.value = state.app;
    },
  };
  return pane;
}
