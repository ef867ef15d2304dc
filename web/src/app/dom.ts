// DOM building for the dashboard.  Every element is made with
// document.createElement and every piece of text goes in as a text node:
// nothing is ever parsed as HTML in the dashboard's document (no innerHTML,
// no insertAdjacentHTML, no style or event-handler attributes, which the
// Content-Security-Policy would refuse anyway).

export type Child = Node | string | number | null | undefined | false;

export interface Props {
  class?: string;
  /** Attributes set with setAttribute; style, srcdoc and on* are refused. */
  attrs?: Record<string, string>;
  /** Event listeners. */
  on?: { [K in keyof HTMLElementEventMap]?: (ev: HTMLElementEventMap[K]) => void };
  [prop: string]: unknown;
}

const REFUSED_ATTR = /^(on|style$|srcdoc$)/i;

function setAttrs(el: Element, attrs: Record<string, string>): void {
  for (const [name, value] of Object.entries(attrs)) {
    if (REFUSED_ATTR.test(name)) throw new Error(`attribute ${name} is not set by the dashboard`);
    el.setAttribute(name, value);
  }
}

/** Append children (text as text nodes; null, undefined and false skipped). */
export function append(parent: Node, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    parent.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

/** h('button', {class: 'primary', on: {click}}, 'Run') */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props | null = null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (props) {
    for (const [key, value] of Object.entries(props)) {
      if (value === undefined) continue;
      if (key === 'class') el.className = String(value);
      else if (key === 'attrs') setAttrs(el, value as Record<string, string>);
      else if (key === 'on') {
        for (const [ev, fn] of Object.entries(value as Record<string, EventListener>)) el.addEventListener(ev, fn);
      } else if (REFUSED_ATTR.test(key) || /HTML$/.test(key)) {
        throw new Error(`property ${key} is not set by the dashboard`);
      } else {
        (el as unknown as Record<string, unknown>)[key] = value;
      }
    }
  }
  append(el, ...children);
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/** An SVG element with attributes (numbers are written as they are). */
export function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number> = {},
  ...children: Child[]
): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG_NS, tag);
  const a: Record<string, string> = {};
  for (const [k, v] of Object.entries(attrs)) a[k] = String(v);
  setAttrs(el, a);
  append(el, ...children);
  return el;
}

/** Replace every child of parent. */
export function replace(parent: Node, ...children: Child[]): void {
  while (parent.firstChild) parent.removeChild(parent.firstChild);
  append(parent, ...children);
}
