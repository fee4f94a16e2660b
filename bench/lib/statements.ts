import pg from "pg";

/**
 * Statements per request, from PostgreSQL's pg_stat_statements (BENCH_STATEMENTS=1): the work a
 * scenario asks of the database, counted rather than timed, so that it can be compared on a
 * loaded host. Needs the extension preloaded (shared_preload_libraries = 'pg_stat_statements');
 * without it the count is skipped with a line saying why.
 */
export interface StatementCount {
  /** Every statement the run's database executed during the measured window, per successful request. */
  perRequest: number;
  /** Transactions committed in the window (pg_stat_database), per successful request. */
  transactionsPerRequest: number;
  /** PostgreSQL's execution time of every statement (pg_stat_statements total_exec_time), microseconds per successful request. */
  execUsPerRequest: number;
  /**
   * The most frequent statements (BENCH_STATEMENTS_TOP, default 12): calls per successful request,
   * their execution time in microseconds per successful request (planning, parsing, the protocol
   * and the commit's WAL flush are not in it), and the statement's text, shortened.
   */
  top: { perRequest: number; execUsPerRequest: number; planUsPerRequest: number; query: string }[];
}

export class StatementCounter {
  private constructor(
    private readonly admin: pg.Client,
    private readonly dbName: string,
    private commitsAtStart = 0,
  ) {}

  /** Null (and a reason logged) where the extension cannot be used. */
  static async open(adminUrl: string, dbName: string, log: (line: string) => void): Promise<StatementCounter | null> {
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    try {
      await admin.query("create extension if not exists pg_stat_statements");
      await admin.query("select 1 from pg_stat_statements limit 1");
      return new StatementCounter(admin, dbName);
    } catch (error) {
      log(`statement counts skipped: ${(error as Error).message} (set shared_preload_libraries = 'pg_stat_statements')`);
      await admin.end().catch(() => undefined);
      return null;
    }
  }

  async begin(): Promise<void> {
    // Only this run's database: other runs on the same server (other worktrees) keep their counts.
    await this.admin.query("select pg_stat_statements_reset(0, (select oid from pg_database where datname = $1), 0)", [this.dbName]);
    this.commitsAtStart = await this.commits();
  }

  async end(okRequests: number): Promise<StatementCount> {
    const per = (n: number) => (okRequests > 0 ? n / okRequests : NaN);
    const { rows } = await this.admin.query<{ calls: string; exec_ms: number; plan_ms: number; query: string }>(
      `select s.calls::text as calls, s.total_exec_time as exec_ms, s.total_plan_time as plan_ms, s.query from pg_stat_statements s join pg_database d on d.oid = s.dbid
        where d.datname = $1 order by s.calls desc`,
      [this.dbName],
    );
    const total = rows.reduce((sum, row) => sum + Number(row.calls), 0);
    const execMs = rows.reduce((sum, row) => sum + Number(row.exec_ms), 0);
    const commits = (await this.commits()) - this.commitsAtStart;
    return {
      perRequest: per(total),
      transactionsPerRequest: per(commits),
      execUsPerRequest: per(execMs * 1000),
      top: rows.slice(0, Number(process.env.BENCH_STATEMENTS_TOP ?? 12)).map((row) => ({
        perRequest: per(Number(row.calls)),
        execUsPerRequest: per(Number(row.exec_ms) * 1000),
        planUsPerRequest: per(Number(row.plan_ms) * 1000),
        query: row.query.replace(/\s+/g, " ").slice(0, 140),
      })),
    };
  }

  async close(): Promise<void> {
    await this.admin.end().catch(() => undefined);
  }

  private async commits(): Promise<number> {
    const { rows } = await this.admin.query<{ n: string }>("select xact_commit::text as n from pg_stat_database where datname = $1", [this.dbName]);
    return Number(rows[0]?.n ?? 0);
  }
}
