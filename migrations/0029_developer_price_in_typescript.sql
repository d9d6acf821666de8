-- The developer-key hold is priced by decideCall through the money module (priceTokensThenRound,
-- rounded up); no SQL function prices a call any more.
drop function if exists faucet_developer_price(numeric, bigint);
