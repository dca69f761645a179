//! Statements prepared once per pooled connection: `exec`, `rows`, `row` and `row_opt`
//! are `execute`, `query`, `query_one` and `query_opt` on a statement from the
//! connection's cache, so that a query costs one round trip, not a prepare and then an
//! execute.

use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Error, Row};

/// Parameters of a statement.
pub(super) type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

/// Queries through the connection's statement cache.
#[async_trait::async_trait]
pub(super) trait Prepared {
    async fn exec(&self, sql: &str, params: Params<'_>) -> Result<u64, Error>;
    async fn rows(&self, sql: &str, params: Params<'_>) -> Result<Vec<Row>, Error>;
    async fn row(&self, sql: &str, params: Params<'_>) -> Result<Row, Error>;
    async fn row_opt(&self, sql: &str, params: Params<'_>) -> Result<Option<Row>, Error>;
}

#[async_trait::async_trait]
impl<C: GenericClient> Prepared for C {
    async fn exec(&self, sql: &str, params: Params<'_>) -> Result<u64, Error> {
        let statement = self.prepare_cached(sql).await?;
        self.execute(&statement, params).await
    }

    async fn rows(&self, sql: &str, params: Params<'_>) -> Result<Vec<Row>, Error> {
        let statement = self.prepare_cached(sql).await?;
        self.query(&statement, params).await
    }

    async fn row(&self, sql: &str, params: Params<'_>) -> Result<Row, Error> {
        let statement = self.prepare_cached(sql).await?;
        self.query_one(&statement, params).await
    }

    async fn row_opt(&self, sql: &str, params: Params<'_>) -> Result<Option<Row>, Error> {
        let statement = self.prepare_cached(sql).await?;
        self.query_opt(&statement, params).await
    }
}
