// What plugin-prisma hands a resolver (`query`): the include/select its selection needs, and for a
// connection the take/skip/cursor of the page. The functions in db/models take it and spread it into
// their one Prisma call, so plugin-prisma still loads relations in that call and api/ never calls Prisma.

/** The `query` of a `t.prismaField` resolver for a model with these Include and Select types. */
export interface PrismaFieldQuery<Include, Select> {
  include?: Include;
  select?: Select;
}
