-- Server-side A/B of the error-group triggers' cost on 500-row INSERTs (≈ 3 KB rows, like
-- bench:groups), without the client: ab.rounds rounds, each one INSERT with the four group triggers
-- on and one with them off, the order alternating, times summed per mode; ab.stacks=1 gives every
-- row a ~1 KB Node stack (bench:groups' STACKS=1). Run in a freshly migrated scratch database (it
-- leaves its rows):
--   PGOPTIONS="-c ab.stacks=1 -c ab.rounds=20" psql -d <scratch database> -f bench/groupTriggerAb.sql
-- Prints: NOTICE stacks=… rounds=… on=… ms off=… ms on/off=…
DO $$
DECLARE
  on_ms float8 := 0; off_ms float8 := 0; t timestamptz; i int; m int; trig text;
  triggers text[] := ARRAY['tg_dead_letters__error_group_id', 'tg_dead_letters__error_groups_insert', 'tg_dead_letters__error_groups_update', 'tg_dead_letters__error_groups_delete'];
  with_stacks boolean := current_setting('ab.stacks') = '1';
  rounds int := current_setting('ab.rounds')::int;
  filler text := repeat('x', 2600);
  n int := 0;
BEGIN
  FOR i IN 1..rounds LOOP
    FOR m IN 0..1 LOOP
      IF (m + i) % 2 = 1 THEN
        FOREACH trig IN ARRAY triggers LOOP EXECUTE format('ALTER TABLE dead_letters DISABLE TRIGGER %I', trig); END LOOP;
      END IF;
      t := clock_timestamp();
      INSERT INTO dead_letters (event_type, queue, source, payload, headers, error_kind, error_message, error_stack)
      SELECT (ARRAY['order.placed','order.shipped','payment.captured','user.signup'])[1 + g % 4], 'orders', 'checkout',
             jsonb_build_object('orderId', g, 'note', filler), '{}', 'DOWNSTREAM_API', 'HTTP 503 from inventory-service (request ' || g || ')',
             CASE WHEN with_stacks THEN 'Error: HTTP 503 from inventory-service (request ' || g || ')
    at InventoryClient.reserve (/app/src/clients/inventory.ts:' || (80 + g % 40) || ':11)
    at async ' || (ARRAY['placeOrder','shipOrder','captureOrder'])[1 + g % 3] || ' (/app/src/orders/handlers.ts:' || (100 + g % 7) || ':5)
    at async Promise.all (index ' || (g % 4) || ')
    at async consume (/app/src/kafka/consumer.ts:57:9)
    at async Runner.processEachMessage (/app/node_modules/kafkajs/src/consumer/runner.js:231:9)
    at async onBatch (/app/node_modules/kafkajs/src/consumer/runner.js:447:9)
    at async Runner.handleBatch (/app/node_modules/kafkajs/src/consumer/runner.js:461:5)
    at async /app/node_modules/kafkajs/src/consumer/runner.js:584:13' END
        FROM generate_series(n, n + 499) g;
      n := n + 500;
      IF (m + i) % 2 = 1 THEN
        off_ms := off_ms + extract(epoch FROM clock_timestamp() - t) * 1000;
        FOREACH trig IN ARRAY triggers LOOP EXECUTE format('ALTER TABLE dead_letters ENABLE TRIGGER %I', trig); END LOOP;
      ELSE
        on_ms := on_ms + extract(epoch FROM clock_timestamp() - t) * 1000;
      END IF;
    END LOOP;
  END LOOP;
  RAISE NOTICE 'stacks=% rounds=% on=% ms off=% ms on/off=%', with_stacks, rounds, round(on_ms), round(off_ms), round((on_ms / off_ms)::numeric, 3);
END $$;
