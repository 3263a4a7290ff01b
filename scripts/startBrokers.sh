#!/usr/bin/env bash
# Starts whichever of the test brokers is not listening on 127.0.0.1: RabbitMQ (5672), Redis (6379)
# and NATS with JetStream (4222). Idempotent: a broker whose port answers is left alone, so with all
# three up this does nothing. No service manager is needed (there is none in CI containers): each is
# started detached, with its log under $BROKER_DIR. Exits non-zero when one does not come up in time.
set -euo pipefail

BROKER_DIR="${BROKER_DIR:-/tmp/lazarus-brokers}"
WAIT_SECONDS="${BROKER_WAIT_SECONDS:-90}"
# Redis and NATS ports may be moved (to try this script beside running brokers); RabbitMQ's may not.
REDIS_PORT="${REDIS_PORT:-6379}"
NATS_PORT="${NATS_PORT:-4222}"

is_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_for() { # name port
  for _ in $(seq 1 "$WAIT_SECONDS"); do is_open "$2" && { echo "$1 is up on 127.0.0.1:$2"; return 0; }; sleep 1; done
  echo "$1 did not open 127.0.0.1:$2 within ${WAIT_SECONDS}s (log: $BROKER_DIR)" >&2
  return 1
}

need() { command -v "$1" >/dev/null 2>&1 || { echo "$1 is not installed; cannot start it" >&2; return 1; }; }

started=()
mkdir -p "$BROKER_DIR"

if ! is_open 5672; then
  need rabbitmq-server
  echo "starting RabbitMQ (rabbitmq-server -detached)"
  # As root, the Debian wrapper runs it as the rabbitmq user; its logs go to /var/log/rabbitmq.
  RABBITMQ_NODE_IP_ADDRESS="${RABBITMQ_NODE_IP_ADDRESS:-127.0.0.1}" rabbitmq-server -detached
  started+=("RabbitMQ:5672")
fi

if ! is_open "$REDIS_PORT"; then
  need redis-server
  echo "starting Redis (redis-server --daemonize yes)"
  redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --dir "$BROKER_DIR" --logfile "$BROKER_DIR/redis-$REDIS_PORT.log" \
    --pidfile "$BROKER_DIR/redis-$REDIS_PORT.pid"
  started+=("Redis:$REDIS_PORT")
fi

if ! is_open "$NATS_PORT"; then
  need nats-server
  echo "starting NATS with JetStream (nats-server -js)"
  mkdir -p "$BROKER_DIR/nats-$NATS_PORT"
  nohup nats-server -a 127.0.0.1 -p "$NATS_PORT" -js -sd "$BROKER_DIR/nats-$NATS_PORT" -l "$BROKER_DIR/nats-$NATS_PORT.log" \
    -P "$BROKER_DIR/nats-$NATS_PORT.pid" >/dev/null 2>&1 &
  disown || true
  started+=("NATS:$NATS_PORT")
fi

for broker in ${started[@]+"${started[@]}"}; do wait_for "${broker%%:*}" "${broker##*:}"; done
# The AMQP port opens before RabbitMQ has finished booting its plugins and vhosts.
if [[ " ${started[*]-} " == *" RabbitMQ:5672 "* ]]; then rabbitmqctl -q await_startup; fi
exit 0
