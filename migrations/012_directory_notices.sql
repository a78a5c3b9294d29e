-- Every instance keeps API keys and import suppliers in memory, so that a request is authenticated
-- and finds its supplier without a round trip to the store. A change to either table tells every
-- instance to forget what it holds: the NOTIFY is sent by the changing transaction itself, and
-- PostgreSQL delivers it when (and only if) that transaction commits, whoever made the change (the
-- service, import-admin, or SQL typed by hand). Statement-level, so that a bulk change sends one
-- notice; PostgreSQL also folds identical notices of one transaction into one.
CREATE FUNCTION notify_directory_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('directory_changed', TG_TABLE_NAME);
  RETURN NULL;
END
$$;

CREATE TRIGGER api_keys_directory_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON api_keys
  FOR EACH STATEMENT EXECUTE FUNCTION notify_directory_changed();
CREATE TRIGGER import_suppliers_directory_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON import_suppliers
  FOR EACH STATEMENT EXECUTE FUNCTION notify_directory_changed();
