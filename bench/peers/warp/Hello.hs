-- Warp peer for the fibra benchmark harness: GET /plaintext -> "Hello, World!".
-- Build: ghc -O2 -threaded Hello.hs   Run: ./Hello PORT +RTS -N1
{-# LANGUAGE OverloadedStrings #-}
import Network.HTTP.Types (status200, status404, hContentType)
import Network.Wai (rawPathInfo, responseLBS)
import Network.Wai.Handler.Warp (defaultSettings, runSettings, setHost, setPort)
import System.Environment (getArgs)

main :: IO ()
main = do
  args <- getArgs
  let port = case args of
        (p : _) -> read p
        _ -> 8080
  runSettings (setHost "127.0.0.1" (setPort port defaultSettings)) $ \req respond ->
    respond $
      if rawPathInfo req == "/plaintext"
        then responseLBS status200 [(hContentType, "text/plain")] "Hello, World!"
        else responseLBS status404 [] ""
