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
  const text = decodeText(input);
  let depth = 0;
  let rootKind: 'array' | 'object' | null = null;
  let inString = false;
  let esc = false;
  let line = 1;
  // Root object: whether the next string is a key, the current key, a string being captured.
  let expectKey = false;
  let currentKey: string | null = null;
  let strCapture: { kind: 'key' | 'value'; parts: string[]; start: number } | null = null;
  // The records array: depth of its elements and whether it is chosen.
  let arrayDepth = -1;
  let state: 'none' | 'candidate' | 'chosen' | 'finished' = 'none';
  let elemParts: string[] = [];
  let elemStart = -1;
  let elemBytes = 0;
  let elemLine = 0;
  let elemIndex = 0;
  const found: JsonElement[] = [];

  const finishElement = (chunk: string, end: number) => {
    elemParts.push(chunk.slice(elemStart, end));
    const raw = elemParts.join('');
    elemParts = [];
    elemStart = -1;
    elemIndex++;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (e) {
      throw new DataFileError(`invalid JSON: ${(e as Error).message}`, { row: elemIndex, line: elemLine });
    }
    found.push({ index: elemIndex, line: elemLine, value });
  };

  for await (const chunk of text as AsyncIterable<string>) {
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk.charCodeAt(i);
      if (c === 10) {
        line++;
        continue;
      }
      if (inString) {
        if (esc) esc = false;
        else if (c === 92) esc = true;
        else if (c === 34) {
          inString = false;
          if (strCapture) {
            strCapture.parts.push(chunk.slice(strCapture.start, i));
            let s: string;
            try {
              s = JSON.parse(`"${strCapture.parts.join('')}"`) as string;
            } catch {
              throw new DataFileError('invalid string in the root object', { line });
            }
            if (strCapture.kind === 'key') currentKey = s;
            else if (currentKey !== null) result.rootStrings.set(currentKey, s);
            strCapture = null;
          }
        }
        continue;
      }
      if (c === 32 || c === 9 || c === 13) continue;
      if (depth === 0 && rootKind !== null) throw new DataFileError('unexpected content after the JSON document', { line });

      if (state !== 'finished' && state !== 'none' && depth === arrayDepth && elemStart < 0 && c !== 44 && c !== 93) {
        if (c === 123) {
          state = 'chosen';
          elemStart = i;
          elemLine = line;
          elemBytes = 0;
        } else if (state === 'candidate' && rootKind === 'object' && onlyKey === undefined) {
          state = 'none'; // an array of scalars is not the records; keep looking
          arrayDepth = -1;
        } else {
          throw new DataFileError('every element of the records array must be an object', { row: elemIndex + 1, line });
        }
      }

      switch (c) {
        case 34: // "
          inString = true;
          if (depth === 1 && rootKind === 'object') strCapture = { kind: expectKey ? 'key' : 'value', parts: [], start: i + 1 };
          break;
        case 58: // :
          if (depth === 1 && rootKind === 'object') expectKey = false;
          break;
        case 44: // ,
          if (depth === 1 && rootKind === 'object') expectKey = true;
          break;
        case 123: // {
        case 91: // [
          if (rootKind === null) {
            rootKind = c === 91 ? 'array' : 'object';
            if (rootKind === 'array') {
              arrayDepth = 1;
              state = 'candidate';
            } else expectKey = true;
          } else if (c === 91 && depth === 1 && rootKind === 'object' && state === 'none' && (onlyKey === undefined || currentKey === onlyKey)) {
            arrayDepth = 2;
            result.key = currentKey;
            state = 'candidate';
          }
          depth++;
          break;
        case 125: // }
        case 93: // ]
          depth--;
          if (depth < 0) throw new DataFileError('unbalanced brackets', { line });
          if (elemStart >= 0 && depth === arrayDepth) finishElement(chunk, i + 1);
          else if (c === 93 && depth === arrayDepth - 1 && state === 'chosen') state = 'finished';
          else if (c === 93 && depth === arrayDepth - 1 && state === 'candidate') {
            // An empty array: the records when it is the root or the named key; otherwise look further.
            if (rootKind === 'array' || onlyKey !== undefined) state = 'finished';
            else {
              state = 'none';
              arrayDepth = -1;
              result.key = null;
            }
          }
          break;
        default:
          if (rootKind === null) throw new DataFileError('the document must be a JSON array or object', { line });
      }
    }
    if (elemStart >= 0) {
      elemParts.push(chunk.slice(elemStart));
      elemBytes += chunk.length - elemStart;
      elemStart = 0;
      if (elemBytes > limits.maxRecordBytes)
        throw new DataFileError(`a record is larger than ${limits.maxRecordBytes} bytes`, { row: elemIndex + 1, line: elemLine });
    }
    if (strCapture) {
      strCapture.parts.push(chunk.slice(strCapture.start));
      strCapture.start = 0;
    }
    while (found.length) {
      const el = found.shift()!;
      if (el.index > limits.maxRecords) throw new DataFileError(`more than ${limits.maxRecords} records`, { row: el.index, line: el.line });
      yield el;
    }
  }
  if (rootKind === null) throw new DataFileError('the file is empty');
  if (inString || depth !== 0) throw new DataFileError('the JSON document ends early (truncated file?)', { row: elemIndex + 1, line });
  if (state === 'none') {
    throw new DataFileError(onlyKey ? `the document has no "${onlyKey}" array` : 'the document holds no array of objects');
  }
}
