// Alert history (a page, filtered) and alert rules.
import type { Db } from '../db/createDb.ts';
import { findAlertOrThrow, findAlertPage, findAlertRules, type AlertPageQuery } from '../db/models/alerts.ts';
import type { AlertDeliveryStatus, AlertTrigger } from '../generated/prisma/enums.ts';

export { findAlertOrThrow as readAlertOrThrow, findAlertRules as readAlertRules };

/** Fields combine with AND; absent fields match every alert. */
export interface AlertFilter {
  ruleId?: bigint;
  triggers?: AlertTrigger[];
  subject?: string;
  deliveryStatuses?: AlertDeliveryStatus[];
}

/** plugin-prisma's page (`query`) of the alerts matching `filter`, newest first. */
export function readAlertPage(db: Db, query: AlertPageQuery, filter: AlertFilter) {
  return findAlertPage(db, query, {
    ...(filter.ruleId !== undefined && { ruleId: filter.ruleId }),
    ...(filter.triggers && { trigger: { in: filter.triggers } }),
    ...(filter.subject !== undefined && { subject: filter.subject }),
    ...(filter.deliveryStatuses && { deliveryStatus: { in: filter.deliveryStatuses } }),
  });
}
