// Alert history and alert rules, as plugin-prisma selects them, and the rule writes.
import type { Db } from '../createDb.ts';
import type { Prisma } from '../../generated/prisma/client.ts';
import type { PrismaFieldQuery } from './prismaQuery.ts';

export type AlertQuery = PrismaFieldQuery<Prisma.AlertInclude, Prisma.AlertSelect>;
/** plugin-prisma's page of a connection over alerts (cursor on id). */
export type AlertPageQuery = AlertQuery & { take: number; skip: number; cursor?: Prisma.AlertWhereUniqueInput };

/** Newest first. */
export function findAlertPage(db: Db, query: AlertPageQuery, where: Prisma.AlertWhereInput) {
  return db.alert.findMany({ ...query, where, orderBy: { id: 'desc' } });
}

/** For an alert just written: its absence is an unexpected error. */
export function findAlertOrThrow(db: Db, id: bigint, query: AlertQuery = {}) {
  return db.alert.findUniqueOrThrow({ ...query, where: { id } });
}

/** Oldest first. */
export function findAlertRules(db: Db, query: PrismaFieldQuery<Prisma.AlertRuleInclude, Prisma.AlertRuleSelect> = {}) {
  return db.alertRule.findMany({ ...query, orderBy: { id: 'asc' } });
}

export function findAlertRule(db: Db, id: bigint) {
  return db.alertRule.findUnique({ where: { id } });
}

/** For a rule just written: its absence is an unexpected error. */
export function findAlertRuleOrThrow(db: Db, id: bigint) {
  return db.alertRule.findUniqueOrThrow({ where: { id } });
}

/** The id of the rule named `name`, other than `exceptId` when given. */
export function findAlertRuleIdByName(db: Db, name: string, exceptId: bigint | null) {
  return db.alertRule.findFirst({ where: { name, ...(exceptId !== null && { id: { not: exceptId } }) }, select: { id: true } });
}

export function insertAlertRule(db: Db, data: Prisma.AlertRuleCreateInput) {
  return db.alertRule.create({ data });
}

/** How many rules changed: 0 when rule `id` is gone. */
export function updateAlertRuleRow(db: Db, id: bigint, data: Prisma.AlertRuleUpdateManyMutationInput) {
  return db.alertRule.updateMany({ where: { id }, data });
}

/** How many rules were deleted: 0 when rule `id` was already gone. */
export function deleteAlertRuleRow(db: Db, id: bigint) {
  return db.alertRule.deleteMany({ where: { id } });
}
