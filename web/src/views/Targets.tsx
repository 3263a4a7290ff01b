// Where deliveries go: per target, deliveries per minute, success rate and response time.
import { DeliveryCharts } from './DeliveryCharts.tsx';

export default function Targets() {
  return (
    <div>
      <h1>Targets</h1>
      <p className="muted">Every delivery attempt, by the target it went to (a URL’s host, a queue, a subject). Attempts of in-process handlers record no target.</p>
      <DeliveryCharts groupBy="TARGET" />
    </div>
  );
}
