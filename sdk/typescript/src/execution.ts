/**
 * The rich results of a code context's `runCode`: `Execution`, `Result` and
 * `ExecutionError`, parsed from the API's Execution object (issue 4):
 *
 *   {"results": [...], "stdout", "stderr", "error": null | {"name", "value", "traceback"},
 *    "execution_count", "exit_code", "duration_ms"}
 *
 * Each result has `is_main_result` and one field per MIME type present:
 * `text`, `html`, `markdown`, `svg`, `png` and `jpeg` (base64, no prefix),
 * `json` (an object), `latex`, `javascript`, and `extra` (any other MIME type).
 * Parsing never throws: a field of the wrong type is left out.
 */

import { isObject, num, str, type JsonObject } from "./models.js";

/** One rich output of a cell: the cell's value (`is_main_result`) or a `display()`. */
export class Result {
  /** True for the cell's value (Jupyter `execute_result`), false for displays. */
  readonly is_main_result: boolean;
  /** text/plain: the repr. */
  readonly text: string | undefined;
  readonly html: string | undefined;
  readonly markdown: string | undefined;
  /** image/svg+xml, as text. */
  readonly svg: string | undefined;
  /** image/png, base64 without a `data:` prefix. */
  readonly png: string | undefined;
  /** image/jpeg, base64 without a `data:` prefix. */
  readonly jpeg: string | undefined;
  /** application/json, parsed. */
  readonly json: unknown;
  readonly latex: string | undefined;
  readonly javascript: string | undefined;
  /** Other MIME types by name (e.g. plotly's "application/vnd.plotly.v1+json"); {} when none. */
  readonly extra: Record<string, unknown>;

  /** Builds a result from the API's JSON object (untrusted: wrong types are dropped). */
  constructor(raw: JsonObject) {
    this.is_main_result = raw.is_main_result === true;
    this.text = optStr(raw.text);
    this.html = optStr(raw.html);
    this.markdown = optStr(raw.markdown);
    this.svg = optStr(raw.svg);
    this.png = optStr(raw.png);
    this.jpeg = optStr(raw.jpeg);
    this.json = raw.json === null ? undefined : raw.json;
    this.latex = optStr(raw.latex);
    this.javascript = optStr(raw.javascript);
    this.extra = isObject(raw.extra) ? { ...raw.extra } : {};
  }

  /** The primary image: `png`, else `jpeg`, else `svg`; undefined when the result has none. */
  get chart(): string | undefined {
    return this.png ?? this.jpeg ?? this.svg;
  }

  /** The fields present (e.g. ["text", "png"]), then the MIME names in `extra`. */
  formats(): string[] {
    const kinds = ["text", "html", "markdown", "svg", "png", "jpeg", "latex", "json", "javascript"] as const;
    const out: string[] = kinds.filter((k) => this[k] !== undefined);
    out.push(...Object.keys(this.extra));
    return out;
  }

  /** The text repr (what a notebook would print), or "". */
  toString(): string {
    return this.text ?? "";
  }
}

/** The error a cell raised: exception name, value and traceback (no ANSI colour codes). */
export class ExecutionError {
  /** Exception class name, e.g. "ZeroDivisionError". */
  readonly name: string;
  /** The exception's message, e.g. "division by zero". */
  readonly value: string;
  /** The formatted traceback, one string with newlines. */
  readonly traceback: string;

  /** Builds the error from the API's `{"name", "value", "traceback"}` (untrusted). */
  constructor(raw: JsonObject) {
    this.name = str(raw.name, "Error");
    this.value = str(raw.value, "");
    const tb = raw.traceback;
    this.traceback = Array.isArray(tb) ? tb.filter((l) => typeof l === "string").join("\n") : str(tb, "");
  }

  /** "Name: value", then the traceback if there is one. */
  toString(): string {
    const head = this.value ? `${this.name}: ${this.value}` : this.name;
    return this.traceback ? `${head}\n${this.traceback}` : head;
  }
}

/** What a cell produced: rich results in order, its streams, and its error if it raised. */
export class Execution {
  /** Rich outputs in the order the kernel produced them. */
  readonly results: Result[];
  /** Everything the cell printed on stdout. */
  readonly stdout: string;
  readonly stderr: string;
  /** The exception the cell raised, or null. */
  readonly error: ExecutionError | null;
  /** The kernel's execution counter after this cell, or null. */
  readonly execution_count: number | null;
  /** 0 when the cell ran without error, 1 when it raised. */
  readonly exit_code: number;
  /** Milliseconds the cell took, measured in the guest. */
  readonly duration_ms: number;

  /** Builds an execution from the API's JSON (untrusted: wrong types give defaults). */
  constructor(raw: unknown) {
    const o = isObject(raw) ? raw : {};
    this.results = Array.isArray(o.results) ? o.results.filter(isObject).map((r) => new Result(r)) : [];
    this.stdout = str(o.stdout, "");
    this.stderr = str(o.stderr, "");
    this.error = isObject(o.error) ? new ExecutionError(o.error) : null;
    this.execution_count = num(o.execution_count, null);
    this.exit_code = num(o.exit_code, this.error ? 1 : 0);
    this.duration_ms = num(o.duration_ms, 0);
  }

  /** The first image among the results (base64 PNG), or undefined. */
  get png(): string | undefined {
    for (const r of this.results) if (r.png !== undefined) return r.png;
    return undefined;
  }

  /** The result that is the cell's value (`is_main_result`), or undefined. */
  get mainResult(): Result | undefined {
    return this.results.find((r) => r.is_main_result);
  }

  /** The text of the main result (the repr of the cell's last expression), or undefined when the cell has no value. */
  get text(): string | undefined {
    return this.mainResult?.text;
  }
}

function optStr(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}
