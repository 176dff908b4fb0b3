# frame tests
