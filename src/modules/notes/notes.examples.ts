import { EXAMPLE_ACCOUNT_NUMBER } from '../account-data/index.ts';
import { DEMO } from '../admin/index.ts';
import type { CreateNotesBody, CreateNotesResponse } from './notes.schemas.ts';

// OpenAPI examples: a note onto the example account once it is created.

export const IMPORT_NOTES: CreateNotesBody = {
  import_supplier: DEMO.supplier,
  external_account_number: EXAMPLE_ACCOUNT_NUMBER,
  notes: [
    { body: 'Called the customer about the move-in date.', created_at: '2024-04-02T11:00:00Z' },
    { document_paths: [{ document_path: 'letters/DEMO-0001/welcome-2019.pdf' }] },
  ],
};

export const NOTE_RESULTS: CreateNotesResponse = [
  { created_at: '2024-04-02T11:00:00Z', body: 'Called the customer about the move-in date.', status: 'NOTE_CREATION_SUCCESS' },
  { created_at: '2025-03-04T10:16:00Z', body: null, status: 'NOTE_CREATION_SUCCESS' },
];
