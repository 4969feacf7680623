/*
 * Chirp Console: the Peers tab: the instances of a DNS-SD service type the console sees, refreshed while the tab is
 * shown. Names, addresses, fingerprints and metadata from the network are put in as text.
 */
import { markReady } from "./activity.js";
import { api } from "./api.js";
import { $, el } from "./dom.js";
import { formatClock, shortFingerprint, trustText } from "./format.js";
import { state } from "./state.js";

const PEERS_REFRESH_MS = 2000;

/** The tab's table and service select. */
export function createPeersPane() {
  const pane = {
    timer: 0,
    generation: 0,
    servicesLoaded: false,
    shownService: null,  // the service type whose peers the table shows

    start() {
      this.stop();
      if (!this.servicesLoaded) this.loadServices();
      this.refresh();
      this.timer = setInterval(() => { if (document.visibilityState === "visible") this.refresh(); }, PEERS_REFRESH_MS);
    },

    stop() {
      if (this.timer) { clearInterval(this.timer); this.timer = 0; }
    },

    async loadServices() {
      let services = [];
      try {
        const body = await api("/api/services");
        services = Array.isArray(body.services) ? body.services.map(String) : [];
        this.servicesLoaded = true;
      } catch (err) {
        this.showError(err);
      }
      this.fillServices(services);
    },

    fillServices(services) {
      const select = $("peer-service");
      const list = services.slice();
      if (list.indexOf("_chirp._tcp") < 0) list.unshift("_chirp._tcp");
      if (list.indexOf(state.service) < 0) list.push(state.service);
      select.textContent = "";
      for (const name of list) {
        const option = el("option", null, name);
        option.value = name;
        select.appendChild(option);
      }
      select.value = state.service;
    },

    async refresh() {
      const gen = ++this.generation;
      // The first answer for a type may take a moment (the console starts looking for it then): say so meanwhile.
      if (this.shownService !== state.service) this.showEmpty("looking");
      let body;
      try {
        body = await api("/api/peers", { service: state.service });
      } catch (err) {
        if (gen === this.generation) this.showError(err);
        return;
      }
      if (gen !== this.generation) return;
      this.showError(null);
      this.render(Array.isArray(body.peers) ? body.peers : []);
      $("peers-updated").textContent = "Updated " + formatClock(new Date().toISOString()).slice(0, 8);
      markReady();
    },

    showError(err) {
      const node = $("peers-error");
      node.hidden = !err;
      node.textContent = err ? err.message : "";
    },

    render(peers) {
      const tbody = $("peers-table").tBodies[0];
      const rows = [];
      for (const p of peers) {
        if (!p || typeof p !== "object") continue;
        const tr = el("tr", "peer-row");
        tr.dataset.name = String(p.name || "");
        const name = tr.appendChild(el("td"));
        name.appendChild(el("div", "peer-name", String(p.name || "")));
        if (p.id) name.appendChild(el("div", "peer-id", String(p.id)));
        tr.appendChild(el("td", "mono", String(p.host || "")));
        const addresses = tr.appendChild(el("td", "mono"));
        const list = Array.isArray(p.addresses) ? p.addresses : [];
        list.forEach(function (a, i) {
          if (i) addresses.appendChild(el("br"));
          addresses.appendChild(document.createTextNode(String(a)));
        });
        // The device identity, when the instance advertises one: its short fingerprint (the full one as the title),
        // and whether the console trusts it, when it knows.
        const device = tr.appendChild(el("td", "peer-device"));
        const fingerprint = typeof p.fingerprint === "string" ? p.fingerprint : "";
        if (fingerprint) {
          const trust = trustText(p.trusted);
          device.title = fingerprint + (trust ? " (" + trust + ")" : "");
          device.appendChild(el("div", "peer-fingerprint mono", shortFingerprint(fingerprint)));
          if (trust) device.appendChild(el("span", "badge " + (p.trusted ? "badge-yes" : "badge-untrusted"), trust));
        }
        const meta = tr.appendChild(el("td"));
        if (p.metadata && typeof p.metadata === "object") {
          for (const key of Object.keys(p.metadata)) {
            const v = p.metadata[key];
            meta.appendChild(el("span", "meta-chip", key + "=" + (typeof v === "string" ? v : JSON.stringify(v))));
          }
        }
        const connected = tr.appendChild(el("td"));
        connected.appendChild(el("span", "badge " + (p.connected ? "badge-yes" : "badge-no"), p.connected ? "connected" : "no"));
        rows.push(tr);
      }
      tbody.replaceChildren.apply(tbody, rows);
      this.shownService = state.service;
      this.showEmpty(rows.length === 0 ? "none" : "");
    },

    /**
     * What the table alone would not say: "looking" (no answer yet for the chosen type), "none" (no peer of it, and
     * what to try), or "" (peers are listed).
     */
    showEmpty(kind) {
      const node = $("peers-empty");
      node.hidden = !kind;
      const key = kind + " " + state.service;
      if (!kind || node._key === key) return;
      node._key = key;
      node.textContent = "";
      if (kind === "looking") {
        node.appendChild(el("p", "empty-title", "Looking for peers of " + state.service + "…"));
        return;
      }
      node.appendChild(el("p", "empty-title", "No peer advertises " + state.service + "."));
      node.appendChild(el("p", "empty-hint",
        "Peers show up here within 2 s of advertising this service type. Check the app's service type and " +
        "network interface (chirp browse " + state.service + " lists what this machine sees), or choose another " +
        "type above."));
    },
  };
  return pane;
}
