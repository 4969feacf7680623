/*
 * Chirp Console: the parts of a details pane (the Logs and HTTP tabs' right-hand side), all filled with text.
 */
import { el } from "./dom.js";

export function detailHead(titleNode, onClose) {
  const head = el("div", "detail-head");
  head.appendChild(titleNode);
  const close = el("button", "icon-button detail-close", "×");
  close.type = "button";
  close.title = "Close (Esc)";
  close.setAttribute("aria-label", "Close details");
  close.addEventListener("click", onClose);
  head.appendChild(close);
  return head;
}

export function section(title, note) {
  const s = el("div", "detail-section");
  const h = s.appendChild(el("h3", null, title));
  if (note) h.appendChild(el("span", "h-note", note));
  return s;
}

export function fieldList(pairs) {
  const dl = el("dl", "fields");
  for (const [name, value] of pairs) {
    if (value === null || value === undefined || value === "") continue;
    dl.appendChild(el("dt", null, name));
    dl.appendChild(el("dd", null, value));
  }
  return dl;
}
