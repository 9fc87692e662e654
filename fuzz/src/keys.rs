//! Fixed inputs of the fuzz entry points: the public golden-vector test keys of
//! `crates/pki/tests/vectors/` (never used outside tests and fuzzing). No
//! dependencies, so every corpus-replay test can include it with `#[path]`.

/// Crypticle key of the golden vectors (`crates/pki/tests/vectors/crypticle.json`).
pub const KEY_STRING: &str =
    "fGQvbxJdH1eS0evYuMN8Vj5ltvSCMwqnheOwgIf5j7sjxa1iXnIvBjGQrKaCb79I9R7hhAbTehE=";
/// A fixed 32-character nonce (Salt's `uuid4().hex` form).
pub const NONCE: &str = "f650c9aafb2846868b5f5c90b7275a3d";
/// Passphrase of the encrypted PEMs in `keys.json`.
pub const PASSPHRASE: &[u8] = b"salt-vector-pass";
/// The master signing key's public half (`pubsig.json`), the key `pubsig` verifies with.
pub const SIGN_PUBLIC_PEM: &str = "-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAoQ8ckVoMTq4mrSgBGef2
NBFTqCZpLRmX9LKqr3Tld3K/6d0q40DCq9YF/CaiYu1e/6aAL1RW1yG7Fiaw9o4+
jLdnfSSRxcJ4yyClHY2fMR2/2v0dG6kL2gvXPdWxhO6WC+w/OOvFI/cb/ZAvzAwE
iv1HpRugVzjpOnTud4VflsTTVra6wNsvBOtjBwnRtc1M+uEpymJdbdBTtOnFgMVj
lZgkQIOt3KSxWJ+rAc9IB1Vt2jhWemz59goS62FMrW5/yIJyhw7yhmfTMSMSujW3
Jl+52omQhPgjRfDUDNM63XZxNcQqyI4s1rGS9ZaaVOLdpPBpD7FBwDKcH4DWOL/x
lQIDAQAB
-----END PUBLIC KEY-----\n";
/// The master signing key's private half (`pubsig.json`); the `auth_client` target
/// uses it as the minion's key.
pub const SIGN_PRIVATE_PEM: &str = "-----BEGIN RSA PRIVATE KEY-----
MIIEogIBAAKCAQEAoQ8ckVoMTq4mrSgBGef2NBFTqCZpLRmX9LKqr3Tld3K/6d0q
40DCq9YF/CaiYu1e/6aAL1RW1yG7Fiaw9o4+jLdnfSSRxcJ4yyClHY2fMR2/2v0d
G6kL2gvXPdWxhO6WC+w/OOvFI/cb/ZAvzAwEiv1HpRugVzjpOnTud4VflsTTVra6
wNsvBOtjBwnRtc1M+uEpymJdbdBTtOnFgMVjlZgkQIOt3KSxWJ+rAc9IB1Vt2jhW
emz59goS62FMrW5/yIJyhw7yhmfTMSMSujW3Jl+52omQhPgjRfDUDNM63XZxNcQq
yI4s1rGS9ZaaVOLdpPBpD7FBwDKcH4DWOL/xlQIDAQABAoIBACcdMGbsY4jIKoRq
7rmH5/cFLjfr/CcDzC+VJHawAPpdV9ZH7B58n8pzk8iE6XL1CtkzanYUGXLtsi3S
/68hJHewIuX1d6F7dTJ/nxnqRvr6qplYVzVcfJBbx84wk4ghGTeUDFaai6oMXTPb
TIBVetT2ZevnJa2JGLslorRMI8bNa10AzKP1odWafZYOf6IvmDtCI2Cg1AP0CDkt
aKWb58sQu+rQY7l/WXqkovOP2BB8OB1EOBKhTXIvZOrj3oFM76EKkKPLQkIhtNMe
C3Adj4pY/wYdkgyqPp4zqgF95WJp7SzdbyZD3eXRUI4wg80SnScl4U4awR0IGmZA
86hocxECgYEA2RTSaMJTpLhRxUlop7xSDsC9enkRM2sPbokufETMUCP25o//o1fq
ClHaPgYZDX+Hsm8kxCBk6YY31LiAQS5ALvtSi0VpdZVvQa6PKSGkaSDOwHz3e99B
3tdkgFoHoroD+vpwWzRGwj2I+fptAf5mUdooIPiEty8eZ5/zRU92HzcCgYEAve8W
J9c/Mhq7qfTEAgKASXC5Wz99/0ckzxVhUAFqrIUdn0wUX8zNZCW/eyJl8Ow69866
9QAANrncS0ly8Mcemi3Z/EHG2KoiufccltKmBu4TCwIjGGhDwfKYzh1XGL6kEqgE
KRPw4SVMhjPTrBBiQq0S5/ha8P7ywjJLM/xUo5MCgYA2+nUHnx+7+gqLornksWc+
4UWbvQnEMfsojYm+Y1YzfchMQHAIGH3nuy9Awh6aMpBVepyfJ20nT5zYPRoOZ/5N
Z81SBHRfGUeiJOmRCzoufeafDYdIUhTGsVp8v1BrwBy99at7DdRV4WvNk8UD2kBj
vpKnNwm1szNKH1JnXWaXJQKBgGQxl7J0rfW0fILvh+a3gw061cz49XKRCS3kzWzz
El7n6fR6odTXqRHHh/dg8f3h4EmRWLadxX8ZFMjyehviLpaO0Yts94ScW61WWlKF
1Oea95i7C+B4QCYz37/7YlK/XrYow+kXh959Wp0BAgymp+8cdfjA3th65XzkIx/N
YKjZAoGARUPNAsRPFB+WMmG/4frfqGo1sxsFuD+jWBpJFXwNO9WwNteyy4QbeDWV
MdcKXFepE+OujuhKp9y5FzzJGReI6qhs93p3f9nhOcOqyIFswt6M/YtcnBrVS/p1
0Sb+lSiI2VlOOceev3pHXacMaaNq6hPyKvfU6MyWQF3fdpeUM7k=
-----END RSA PRIVATE KEY-----\n";
/// The vectors' private key (`keys.json`), used by the `rsa` target to decrypt.
pub const PRIVATE_PEM: &str = "-----BEGIN RSA PRIVATE KEY-----
MIIEowIBAAKCAQEAlSa4Yce3U0a9QWbuH7GNcH/xCDJXT//avLUlaMkLZeoX4zsV
yiH8y9sk22tWJatpTZoiEukrKzA/ilOtQ7jactOhbzLx1KBR6QkQLXFI9YorOPBE
6LL9QahHWflFPE1J1KqBKMib0KA+oHVURsRtWtzgjqjSr1CGkCttvhsn+h6AQ9ij
6cqr1WQkeNiBs8HuUrTcBz5GJGUS5T6D/FI/kbtkOYfm1kTuO7xryDLBb9/fCHB9
kfjJaRxRehrFhz0+3le/qLzYJDXe0vSvXN/zeHOJ6hBC3CVdd4kz4xDGzYRWyXq8
tk44rHwqoX7q7r2bwI5VgdujGvC9tEYLWZ3nWQIDAQABAoIBAAXUEoZ3qHlPnVut
6wZACPfpeADK/tB4fhK7vW9/07syz6Yoi+xvMZLByInugtpL/Xxz1nsIs5AnfYQp
Su8HjTnJfVh8FCkr7qd9nC06bRBzSscZ1IeHXxAuxEMG06bMmmL+Grf+RuB7MpdQ
nm95g5B2aywH+tuw+OEvYUV5iDFk6nWVdVZT9iivhk6waUWyUQXeDDgtmJudpuaY
A35BxXTml6/UFy5Qj+O/Re42ZQnUha6Muu45R1ZVF+OlN4U7rpuAepZsOTcaU8pE
dJunfXeyTK8st9lXKQ1DY1hxTb2zRxuVhKj0HLuQDTwt5yovzsm4QxeLS+/4N6D9
YuNHkYECgYEAx/mNUsr8D4fv00ZhA7ull762CalxD6bSozaYo8sAgqRnsWob8euM
hChqNoL+dGZ0FgSFiEdLF43T9lFr8u2O0aljFdsMaya5BKTMgGyb5ltf0sYpo7qe
vKYl8IA6IMrEZ2wgjX9m6yjT0YdfBTloaPOQSEs9+A5cF7nGE9hxIfECgYEAvvAJ
poIjbcGKaMQ86zc6J5P9A4ZN4k1dZ8K/qC/+TJqN6r8M5JUt8rDxemUPMLmyNN2x
CGOMQHCUzdcaqfifv45pgjqQxjkCnFhQ4UIGKciiHyb1nQairZIRiMaic1SEE909
XwxxYVbL9FF9Ofdo5K2zGYclRFzVdpOJ4AwTM+kCgYEAnQJS865sOcWBh2C6yzOJ
0JrsUqm3G5Lfz0YOkovQ2sI6qBGn30oSCbGxsxsmrj3C54alUVqomtXAlqVXHGVo
vTVBludl2LuOiRbbefnMbhFQKy1rhCICgBvzreD/wr9xdcJvzKk7JWfo55piALgS
QlT588kf3qNnqzkxTGOkcAECgYBBjKCThEvray08KFqNmckiO0D6S8pDLbIqZAZu
FAPmgozEEVC4zKoYjjxoe3dKkAWo9o7HRX2pxbygKf+iaJNXLOn15ms7UekeiYdC
verlv1ZBAZwCi3ufwOy6Gw88LsClHSfrkJcABs9AEhW+p7xf/W3mDqpxnLk/2wjT
XPHeuQKBgBQ0uD8pbuXo20LpAbzJqwUemC5XOORtbff5I8o7umVjuPl5kebVaBCe
dBr547oGbO7Q3IeRdqawXjGR/BRoi4dOi8s8wVTHO+tbUESwjnundEexJDpG7XQZ
CO7ed06ZbrgszO7hhiLdoXjT1+bCR/1QYmLVcJxTbCCX8CtyVXLU
-----END RSA PRIVATE KEY-----\n";
