import type { Readable } from 'node:stream';
import { DataFileError, type ParseLimits } from '../records.js';
import { decodeText } from './text-stream.js';

export interface JsonElement {
  /** 1-based index among the elements of the records array. */
  index: number;
  /** Line where the element starts. */
  line: number;
  value: unknown;
}

export interface JsonScanResult {
  /** The property that held the records array (`null` when the document itself is the array). */
  key: string | null;
  /** String values of the root object's properties (e.g. GeoJSON's `type`). */
  rootStrings: Map<string, string>;
}

/**
 * Streams the records out of a JSON document without holding the document: either a root array, or
 * the first array of objects held by a property of the root object (`{"data": [...]}`; GeoJSON's
 * `{"features": [...]}` via `onlyKey`). Each element is cut out by a small structural scanner
 * (strings, escapes, nesting) and handed to `JSON.parse`, so memory is bounded by the largest
 * element, not by the file. String properties of the root object are collected for the caller
 * (GeoJSON's `"type": "FeatureCollection"`). Errors name the element and the line.
 */
export async function* scanJsonRecords(input: Readable, limits: ParseLimits, result: JsonScanResult, onlyKey?: string): AsyncGenerator<JsonElement> {
  const scanner = new RecordScanner(limits, result, onlyKey);
  for await (const chunk of decodeText(input) as AsyncIterable<string>) {
    scanner.feed(chunk);
    for (const el of scanner.takeElements()) {
      if (el.index > limits.maxRecords) throw new DataFileError(`more than ${limits.maxRecords} records`, { row: el.index, line: el.line });
      yield el;
    }
  }
  scanner.end();
}

/** The scanner's state between chunks: where it is in the document and in the element being cut. */
class RecordScanner {
  #depth = 0;
  #rootKind: 'array' | 'object' | null = null;
  #inString = false;
  #esc = false;
  #line = 1;
  // Root object: whether the next string is a key, the current key, a string being captured.
  #expectKey = false;
  #currentKey: string | null = null;
  #strCapture: { kind: 'key' | 'value'; parts: string[]; start: number } | null = null;
  // The records array: depth of its elements and whether it is chosen.
  #arrayDepth = -1;
  #state: 'none' | 'candidate' | 'chosen' | 'finished' = 'none';
  #elemParts: string[] = [];
  #elemStart = -1;
  #elemBytes = 0;
  #elemLine = 0;
  #elemIndex = 0;
  #found: JsonElement[] = [];

  constructor(
    private readonly limits: ParseLimits,
    private readonly result: JsonScanResult,
    private readonly onlyKey: string | undefined,
  ) {}

  /** Scans one chunk of text; the elements it completes wait in takeElements(). */
  feed(chunk: string): void {
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk.charCodeAt(i);
      if (c === 10) this.#line++;
      else if (this.#inString) this.#stringChar(c, chunk, i);
      else if (c !== 32 && c !== 9 && c !== 13) this.#structuralChar(c, chunk, i);
    }
    this.#carryOver(chunk);
  }

  takeElements(): JsonElement[] {
    const found = this.#found;
    this.#found = [];
    return found;
  }

  /** The document is complete: it must have held the records array. */
  end(): void {
    if (this.#rootKind === null) throw new DataFileError('the file is empty');
    if (this.#inString || this.#depth !== 0)
      throw new DataFileError('the JSON document ends early (truncated file?)', { row: this.#elemIndex + 1, line: this.#line });
    if (this.#state === 'none') {
      throw new DataFileError(this.onlyKey ? `the document has no "${this.onlyKey}" array` : 'the document holds no array of objects');
    }
  }

  #stringChar(c: number, chunk: string, i: number): void {
    if (this.#esc) this.#esc = false;
    else if (c === 92) this.#esc = true;
    else if (c === 34) {
      this.#inString = false;
      if (this.#strCapture) this.#endCapturedString(chunk, i);
    }
  }

  /** A string of the root object ends: a key, or the value of the current key. */
  #endCapturedString(chunk: string, i: number): void {
    const capture = this.#strCapture!;
    capture.parts.push(chunk.slice(capture.start, i));
    let s: string;
    try {
      s = JSON.parse(`"${capture.parts.join('')}"`) as string;
    } catch {
      throw new DataFileError('invalid string in the root object', { line: this.#line });
    }
    if (capture.kind === 'key') this.#currentKey = s;
    else if (this.#currentKey !== null) this.result.rootStrings.set(this.#currentKey, s);
    this.#strCapture = null;
  }

  #structuralChar(c: number, chunk: string, i: number): void {
    if (this.#depth === 0 && this.#rootKind !== null) throw new DataFileError('unexpected content after the JSON document', { line: this.#line });
    if (this.#state !== 'finished' && this.#state !== 'none' && this.#depth === this.#arrayDepth && this.#elemStart < 0 && c !== 44 && c !== 93) {
      this.#elementStart(c, i);
    }
    const inRootObject = this.#depth === 1 && this.#rootKind === 'object';
    switch (c) {
      case 34: // "
        this.#inString = true;
        if (inRootObject) this.#strCapture = { kind: this.#expectKey ? 'key' : 'value', parts: [], start: i + 1 };
        break;
      case 58: // :
        if (inRootObject) this.#expectKey = false;
        break;
      case 44: // ,
        if (inRootObject) this.#expectKey = true;
        break;
      case 123: // {
      case 91: // [
        this.#open(c);
        break;
      case 125: // }
      case 93: // ]
        this.#close(c, chunk, i);
        break;
      default:
        if (this.#rootKind === null) throw new DataFileError('the document must be a JSON array or object', { line: this.#line });
    }
  }

  /** A value starts at the depth of the records array's elements: an object, or not the records. */
  #elementStart(c: number, i: number): void {
    if (c === 123) {
      this.#state = 'chosen';
      this.#elemStart = i;
      this.#elemLine = this.#line;
      this.#elemBytes = 0;
    } else if (this.#state === 'candidate' && this.#rootKind === 'object' && this.onlyKey === undefined) {
      this.#state = 'none'; // an array of scalars is not the records; keep looking
      this.#arrayDepth = -1;
    } else {
      throw new DataFileError('every element of the records array must be an object', { row: this.#elemIndex + 1, line: this.#line });
    }
  }

  #open(c: number): void {
    if (this.#rootKind === null) {
      this.#rootKind = c === 91 ? 'array' : 'object';
      if (this.#rootKind === 'array') {
        this.#arrayDepth = 1;
        this.#state = 'candidate';
      } else this.#expectKey = true;
    } else if (
      c === 91 &&
      this.#depth === 1 &&
      this.#rootKind === 'object' &&
      this.#state === 'none' &&
      (this.onlyKey === undefined || this.#currentKey === this.onlyKey)
    ) {
      this.#arrayDepth = 2;
      this.result.key = this.#currentKey;
      this.#state = 'candidate';
    }
    this.#depth++;
  }

  #close(c: number, chunk: string, i: number): void {
    this.#depth--;
    if (this.#depth < 0) throw new DataFileError('unbalanced brackets', { line: this.#line });
    if (this.#elemStart >= 0 && this.#depth === this.#arrayDepth) this.#finishElement(chunk, i + 1);
    else if (c === 93 && this.#depth === this.#arrayDepth - 1 && this.#state === 'chosen') this.#state = 'finished';
    else if (c === 93 && this.#depth === this.#arrayDepth - 1 && this.#state === 'candidate') {
      // An empty array: the records when it is the root or the named key; otherwise look further.
      if (this.#rootKind === 'array' || this.onlyKey !== undefined) this.#state = 'finished';
      else {
        this.#state = 'none';
        this.#arrayDepth = -1;
        this.result.key = null;
      }
    }
  }

  #finishElement(chunk: string, end: number): void {
    this.#elemParts.push(chunk.slice(this.#elemStart, end));
    const raw = this.#elemParts.join('');
    this.#elemParts = [];
    this.#elemStart = -1;
    this.#elemIndex++;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (e) {
      throw new DataFileError(`invalid JSON: ${(e as Error).message}`, { row: this.#elemIndex, line: this.#elemLine });
    }
    this.#found.push({ index: this.#elemIndex, line: this.#elemLine, value });
  }

  /** The chunk ends inside an element or a captured string: keep its tail for the next chunk. */
  #carryOver(chunk: string): void {
    if (this.#elemStart >= 0) {
      this.#elemParts.push(chunk.slice(this.#elemStart));
      this.#elemBytes += chunk.length - this.#elemStart;
      this.#elemStart = 0;
      if (this.#elemBytes > this.limits.maxRecordBytes)
        throw new DataFileError(`a record is larger than ${this.limits.maxRecordBytes} bytes`, { row: this.#elemIndex + 1, line: this.#elemLine });
    }
    if (this.#strCapture) {
      this.#strCapture.parts.push(chunk.slice(this.#strCapture.start));
      this.#strCapture.start = 0;
    }
  }
}
