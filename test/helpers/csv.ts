// Reads CSV in tests (csv-parse), so they can check that the CSV export round-trips.
import { parse } from 'csv-parse/sync';

/** Rows of an RFC 4180 CSV text with CRLF line ends (other line ends stay inside a record and fail the test). */
export function parseCsv(text: string): string[][] {
  return parse(text, { record_delimiter: '\r\n' });
}
