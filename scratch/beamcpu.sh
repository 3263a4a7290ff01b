#!/bin/bash
B=$(pgrep -f beam.smp | head -1)
while true; do
  b=$(awk '{print $14+$15}' /proc/$B/stat)
  n=$(for p in $(pgrep -f 'node bench/broker'); do awk '{print $14+$15}' /proc/$p/stat; done | paste -sd+ | bc)
  pgt=$(for p in $(pgrep postgres); do awk '{print $14+$15}' /proc/$p/stat 2>/dev/null; done | paste -sd+ | bc)
  echo "$(date +%s.%N | cut -c1-14) beam=$b node=$n pg=$pgt"
  sleep 0.5
done
