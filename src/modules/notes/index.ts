// The notes module's surface: the import service (the route's and a migration record's), the body
// schema, and the reads and the write other modules make of an account's notes (the account read,
// a forced transactions batch's pinned note).
export { countNotes, findPinnedNotes, insertNotes } from './notes.repository.ts';
export { notesRoutes } from './notes.routes.ts';
export { CreateNotesBody } from './notes.schemas.ts';
export { createNotes, matchNotes, notesAsCreated, type Notes } from './notes.service.ts';
export { notesInsertMany } from './notes.repository.ts';
